import http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { listenOnLoopback } from '../../src/main/loopback';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A real HTTP endpoint for webhook tests; `answer` decides each status (or 'hang' to never answer). */
export async function startReceiver(answer: (r: Received) => number | 'hang' = () => 200) {
  const received: Received[] = [];
  const accepted: Received[] = [];
  let decide = answer;
  /** Requests left hanging, with how to answer each at last (answerHung). */
  const hung: Array<{ r: Received; res: http.ServerResponse }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(r);
      const status = decide(r);
      if (status === 'hang') {
        hung.push({ r, res });
        return;
      }
      if (status >= 200 && status < 300) accepted.push(r);
      res.writeHead(status).end();
    });
  });
  const { url } = await listenOnLoopback(server);
  return {
    url: `${url}/hooks`,
    received,
    accepted,
    setAnswer(next: (r: Received) => number | 'hang') {
      decide = next;
    },
    /** Answers every request left hanging so far with `status`, as an endpoint that recovers would. */
    answerHung(status: number) {
      for (const { r, res } of hung.splice(0)) {
        // One the sender already gave up on is gone: neither answered nor accepted.
        if (res.writableEnded || res.destroyed || res.socket?.destroyed !== false) continue;
        if (status >= 200 && status < 300) accepted.push(r);
        res.writeHead(status).end();
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
