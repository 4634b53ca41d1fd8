/**
 * Finds or builds the two Temporal binaries the project runs locally, keeping them in the
 * project's tool cache so a second run starts at once:
 *  - the Temporal CLI (dev server + Web UI) for `npm start`;
 *  - the Java time-skipping test server for the test suite.
 * Nothing is downloaded from outside the package registries: the CLI is built from the Go
 * module proxy, the test server comes from Maven Central.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync, readFileSync, chmodSync, accessSync, constants, copyFileSync, renameSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../main/child-process';

export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';
export const TEST_SERVER_ARTIFACT = { group: 'io.temporal', artifact: 'temporal-test-server', version: '1.32.1' };

export interface ToolPaths {
  cacheDir: string;
}

function progress(message: string): void {
  process.stderr.write(`[tools] ${message}\n`);
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function findOnPath(binary: string, searchPath = process.env.PATH ?? ''): string | undefined {
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, binary);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** Runs a command, echoing a heartbeat every 15 s so a slow build never looks hung. */
export function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; label: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const heartbeat = setInterval(() => {
      progress(`${options.label}: still working (${Math.round((Date.now() - started) / 1000)} s)`);
    }, 15_000);
    child.on('error', (err) => {
      clearInterval(heartbeat);
      reject(err);
    });
    child.on('exit', (code) => {
      clearInterval(heartbeat);
      if (code === 0) resolve();
      else reject(new Error(`${options.label} failed (exit ${code}):\n${output.slice(-4000)}`));
    });
  });
}

/** Writes `to` whole before it takes its name (a temp file of this process, renamed): a write cut short never passes for the file. */
export function writeWhole(to: string, write: (partial: string) => void): void {
  const partial = `${to}.${process.pid}.partial`;
  write(partial);
  renameSync(partial, to);
}

/**
 * This machine's copies of tools built here, shared by every clone (a fresh clone's tool cache is
 * empty; CI runs in one on the same machine): PARTNER_API_MACHINE_CACHE, else ~/.cache/domain-partner-api.
 * Go caches its modules and compiled packages there too, but linking the 250 MB CLI again still
 * takes 1.5 minutes.
 */
export function machineToolCache(): string {
  return process.env.PARTNER_API_MACHINE_CACHE ?? path.join(os.homedir(), '.cache', 'domain-partner-api');
}

/**
 * The Temporal CLI, in this order: TEMPORAL_CLI_PATH, PATH, the tool cache, this machine's copy
 * of the same version (machineToolCache), a fresh build with Go into the tool cache (then copied
 * to the machine's). Returns undefined when none of these is possible (no Go): the caller then
 * falls back to the SDK's own download.
 */
export async function ensureTemporalCli(cacheDir: string, explicitPath?: string): Promise<string | undefined> {
  if (explicitPath) {
    if (!isExecutable(explicitPath)) throw new Error(`TEMPORAL_CLI_PATH=${explicitPath} is not an executable file`);
    return explicitPath;
  }
  return findOnPath('temporal') ?? ensureGoTool(cacheDir, { binary: 'temporal', module: TEMPORAL_CLI_MODULE, what: 'the Temporal CLI', minutes: 3 });
}

/** Stripe's own mock of its API (validates every request against Stripe's API description), for the tests of the Stripe adapter. */
export const STRIPE_MOCK_MODULE = 'github.com/stripe/stripe-mock@v0.203.0';

/** stripe-mock, built with Go into the tool cache (or this machine's copy of that build); undefined without Go. */
export async function ensureStripeMock(cacheDir: string): Promise<string | undefined> {
  return ensureGoTool(cacheDir, { binary: 'stripe-mock', module: STRIPE_MOCK_MODULE, what: 'stripe-mock', minutes: 1 });
}

/** Mailpit: a local SMTP server with a web inbox and a JSON API (npm start without SMTP_URL, the tests' mail). */
export const MAILPIT_MODULE = 'github.com/axllent/mailpit@v1.33.1';

/** Mailpit, built with Go into the tool cache (or this machine's copy of that build); undefined without Go. */
export async function ensureMailpit(cacheDir: string): Promise<string | undefined> {
  return ensureGoTool(cacheDir, { binary: 'mailpit', module: MAILPIT_MODULE, what: 'Mailpit', minutes: 1 });
}

/** Prometheus' own rule checker and unit tester (`promtool test rules`), for the tests of deploy/prometheus/alerts.yml. */
export const PROMTOOL_MODULE = 'github.com/prometheus/prometheus/cmd/promtool@v0.316.0';

/** promtool, built with Go into the tool cache (or this machine's copy of that build); undefined without Go. */
export async function ensurePromtool(cacheDir: string): Promise<string | undefined> {
  return ensureGoTool(cacheDir, { binary: 'promtool', module: PROMTOOL_MODULE, what: 'promtool', minutes: 6 });
}

/** Caddy, the compose file's proxy (the same version as its image, caddy:2.10.2): test/main/caddy.test.ts runs the repo's Caddyfile with it. */
export const CADDY_MODULE = 'github.com/caddyserver/caddy/v2/cmd/caddy@v2.10.2';

export async function ensureCaddy(cacheDir: string): Promise<string | undefined> {
  return ensureGoTool(cacheDir, { binary: 'caddy', module: CADDY_MODULE, what: 'Caddy', minutes: 10 });
}

/**
 * A Go tool: the tool cache's, this machine's copy of the same version (machineToolCache), or a
 * fresh `go install` into the tool cache, then copied to the machine's. Undefined without Go.
 */
async function ensureGoTool(cacheDir: string, tool: { binary: string; module: string; what: string; minutes: number }): Promise<string | undefined> {
  const binDir = path.join(cacheDir, 'bin');
  const cached = path.join(binDir, tool.binary);
  if (isExecutable(cached)) return cached;
  const machineCopy = path.join(machineToolCache(), tool.module.replace(/[^A-Za-z0-9.@-]+/g, '_'), tool.binary);
  if (isExecutable(machineCopy)) {
    mkdirSync(binDir, { recursive: true });
    // Whole before it takes its name: a copy cut short is never taken for the tool.
    writeWhole(cached, (partial) => {
      copyFileSync(machineCopy, partial);
      chmodSync(partial, 0o755);
    });
    progress(`${tool.what} ready at ${cached} (this machine's build of ${tool.module})`);
    return cached;
  }
  const go = findOnPath('go');
  if (!go) return undefined;
  mkdirSync(binDir, { recursive: true });
  progress(`building ${tool.what} with Go (${tool.module}); this takes about ${tool.minutes} minute${tool.minutes === 1 ? '' : 's'} the first time`);
  await run(go, ['install', tool.module], {
    label: `go install ${tool.binary}`,
    env: { ...process.env, GOBIN: binDir, GOFLAGS: process.env.GOFLAGS ?? '-mod=mod' },
    cwd: cacheDir,
  });
  progress(`${tool.what} ready at ${cached}`);
  try {
    mkdirSync(path.dirname(machineCopy), { recursive: true });
    writeWhole(machineCopy, (partial) => copyFileSync(cached, partial));
  } catch (err) {
    progress(`could not keep a copy for this machine's other clones in ${machineCopy}: ${(err as Error).message}`);
  }
  return cached;
}

/**
 * A launcher script for Temporal's Java time-skipping test server, resolved with Maven into the
 * tool cache. The SDK starts it as an `existing-path` executable and waits 5 s for its port.
 *
 * The JVM runs with a class-data archive made once here on the real clock, C1 only and the
 * serial collector: under libfaketime (the finance tests are run with the clock 400 days on) a
 * plain JVM needs 5.5 s or more to start, past the SDK's wait; with these it starts in about 1 s.
 */
export async function ensureTestServer(cacheDir: string): Promise<string> {
  const { group, artifact, version } = TEST_SERVER_ARTIFACT;
  const dir = path.join(cacheDir, `${artifact}-${version}`);
  const launcher = path.join(dir, 'launch.sh');
  const classpathFile = path.join(dir, 'classpath.txt');
  const archive = path.join(dir, 'classes.jsa');
  if (isExecutable(launcher) && existsSync(classpathFile) && classpathIsComplete(classpathFile) && readFileSync(launcher, 'utf8').includes(archive)) return launcher;
  const mvn = findOnPath('mvn');
  const java = findOnPath('java');
  if (!mvn || !java) throw new Error('the time-skipping test server needs Java and Maven (apt-get install default-jdk-headless maven)');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'pom.xml'),
    `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.tools</groupId>
  <artifactId>temporal-test-server-launcher</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>${group}</groupId>
      <artifactId>${artifact}</artifactId>
      <version>${version}</version>
    </dependency>
  </dependencies>
</project>
`,
  );
  progress(`resolving ${group}:${artifact}:${version} from Maven Central`);
  await run(mvn, ['-q', '-B', 'dependency:build-classpath', `-Dmdep.outputFile=${classpathFile}`], { cwd: dir, label: 'mvn dependency:build-classpath' });
  const classpath = readFileSync(classpathFile, 'utf8').trim();
  const quickStart = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-XX:CICompilerCount=1'];
  await dumpClassArchive(java, [...quickStart, `-XX:ArchiveClassesAtExit=${archive}`, '-cp', classpath, 'io.temporal.testserver.TestServer'], archive);
  writeFileSync(
    launcher,
    `#!/bin/sh
# Starts Temporal's time-skipping test server; arguments are passed on (the SDK gives the port).
exec "${java}" ${quickStart.join(' ')} -Xshare:auto -XX:SharedArchiveFile="${archive}" -cp "$(cat "${classpathFile}")" io.temporal.testserver.TestServer "$@"
`,
  );
  chmodSync(launcher, 0o755);
  progress(`time-skipping test server ready at ${launcher}`);
  return launcher;
}

/**
 * Runs the test server on a free port until it listens, then stops it: the JVM writes the classes
 * it loaded to `archive` as it exits. A failure leaves no archive, and the launcher then starts
 * without one (-Xshare:auto), only more slowly.
 */
async function dumpClassArchive(java: string, args: string[], archive: string): Promise<void> {
  const port = await freePort();
  const child = spawn(java, [...args, String(port)], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && child.exitCode === null && !(await accepts(port))) await new Promise((r) => setTimeout(r, 200));
  child.kill('SIGTERM');
  await exited;
  if (!existsSync(archive)) progress('no class-data archive was written; the test server starts without one');
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function classpathIsComplete(classpathFile: string): boolean {
  const entries = readFileSync(classpathFile, 'utf8').trim().split(path.delimiter);
  return entries.length > 0 && entries.every((entry) => existsSync(entry));
}
