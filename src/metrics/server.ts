/**
 * The operators' metrics endpoint: `GET /metrics` in Prometheus' text format on its own host and
 * port (CONTRACT §13: METRICS_HOST, METRICS_PORT; the worker's WORKER_METRICS_PORT), never on the
 * public API's. `render` answers the exposition text (a registry's, or several joined).
 */
import http from 'node:http';

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

export async function startMetricsServer(host: string, port: number, render: () => Promise<{ contentType: string; text: string }>): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') return void res.writeHead(404).end();
    render().then(
      ({ contentType, text }) => res.writeHead(200, { 'content-type': contentType }).end(text),
      (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${err.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
