import http from 'node:http';
import net from 'node:net';

/**
 * A request exactly as given, for tests that need what fetch refuses (a GET with a body) or a
 * URL that differs from what was signed.
 */
export function rawRequest(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; headers: Headers; body: unknown; text: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(baseUrl);
    const req = http.request(
      { host: url.hostname, port: url.port, method, path, headers: body ? { ...headers, 'content-length': Buffer.byteLength(body) } : headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const h = new Headers();
          for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') h.set(name, value);
          resolve({ status: res.statusCode ?? 0, headers: h, body: jsonOrText(text), text });
        });
      },
    );
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

/** Sends `bytes` as they are on a new connection (what no HTTP client sends: a malformed request) and reads the whole answer, the server closing after it. */
export function rawExchange(baseUrl: string, bytes: Buffer): Promise<{ status: number; headers: Headers; body: unknown }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(url.port), url.hostname, () => socket.end(bytes));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = new Headers();
      for (const line of lines) headers.append(line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim());
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: jsonOrText(rest.join('\r\n\r\n')) });
    });
  });
}

/** The body parsed as JSON, else its text as it came. */
function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
