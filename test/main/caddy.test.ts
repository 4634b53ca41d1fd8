import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { freePorts } from '../../src/main/child-process';
import { listenOnLoopback } from '../../src/main/loopback';
import { ensureCaddy } from '../../src/temporal/tools';
import { loadConfig } from '../../src/config';
import { waitFor } from '../helpers/wait';

/**
 * The compose file's one door, run for real: Caddy (built with Go into the tool cache, the version
 * of the compose image) with the repo's own deploy/caddy/Caddyfile, in front of a stand-in upstream
 * that echoes what it was given. `localhost` gets a certificate from Caddy's local CA here, where a
 * public name gets Let's Encrypt's; everything else is the file as compose runs it.
 */
describe('the proxy in front of the API (deploy/caddy/Caddyfile, run by Caddy)', function () {
  let caddy: ChildProcess | undefined;
  let upstream: http.Server;
  let home: string;
  let httpPort: number;
  let httpsPort: number;
  let ca: Buffer;
  const seen: http.IncomingHttpHeaders[] = [];
  const output: string[] = [];

  before(async function () {
    this.timeout(15 * 60_000); // a first build of Caddy with Go takes minutes
    const config = loadConfig();
    const binary = await ensureCaddy(config.toolCacheDir);
    if (!binary) throw new Error('Caddy is built with Go, and there is no Go toolchain here');
    upstream = http.createServer((req, res) => {
      seen.push(req.headers);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ path: req.url }));
    });
    const { port: upstreamPort } = await listenOnLoopback(upstream);
    let adminPort: number;
    [httpPort, httpsPort, adminPort] = await freePorts(3);
    home = mkdtempSync(path.join(os.tmpdir(), 'caddy-'));
    caddy = spawn(binary, ['run', '--config', path.join(config.projectRoot, 'deploy', 'caddy', 'Caddyfile'), '--adapter', 'caddyfile'], {
      env: {
        PATH: process.env.PATH,
        HOME: home,
        XDG_DATA_HOME: path.join(home, 'data'),
        XDG_CONFIG_HOME: path.join(home, 'config'),
        PUBLIC_HOST: 'localhost',
        HTTP_PORT: String(httpPort),
        HTTPS_PORT: String(httpsPort),
        CADDY_ADMIN: `127.0.0.1:${adminPort}`,
        API_UPSTREAM: `127.0.0.1:${upstreamPort}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    caddy.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
    caddy.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
    const root = path.join(home, 'data', 'caddy', 'pki', 'authorities', 'local', 'root.crt');
    await waitFor(
      async () => {
        try {
          ca = readFileSync(root);
          return (await get('/healthz')).status;
        } catch {
          return 0;
        }
      },
      (status) => status === 200,
      30_000,
      `Caddy serving https on ${httpsPort}`,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${output.join('').slice(-3000)}`);
    });
  });

  after(() => {
    caddy?.kill('SIGKILL');
    upstream?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  function get(pathname: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
    return new Promise((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port: httpsPort, path: pathname, servername: 'localhost', ca, headers: { host: `localhost:${httpsPort}`, ...headers } }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('serves the API over TLS with HSTS, and a client\'s own X-Forwarded-For never reaches it', async function () {
    this.timeout(30_000);
    seen.length = 0;
    const res = await get('/api/partner/v1/availability?domain=coffeebar.com', { 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'http' });
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body).path, '/api/partner/v1/availability?domain=coffeebar.com');
    assert.match(String(res.headers['strict-transport-security']), /max-age=31536000/);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]['x-forwarded-for'], '127.0.0.1', 'the address that connected, not the one the client claimed');
    assert.equal(seen[0]['x-forwarded-proto'], 'https');
  });

  it('answers plain HTTP with a redirect to HTTPS, never the API', async function () {
    this.timeout(30_000);
    seen.length = 0;
    const res = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http.get({ host: '127.0.0.1', port: httpPort, path: '/api/partner/v1/availability', headers: { host: 'localhost' } }, resolve).on('error', reject),
    );
    res.resume();
    assert.equal(res.statusCode, 308);
    assert.match(String(res.headers.location), /^https:\/\/localhost/);
    assert.equal(seen.length, 0, 'nothing reached the API in the clear');
  });

  it('refuses a TLS client that does not trust the certificate (no plaintext fallback on the TLS port)', async function () {
    this.timeout(30_000);
    await assert.rejects(
      new Promise((resolve, reject) => https.get({ host: '127.0.0.1', port: httpsPort, servername: 'localhost', path: '/' }, resolve).on('error', reject)),
      /self[- ]signed|unable to verify|certificate/i,
    );
  });
});
