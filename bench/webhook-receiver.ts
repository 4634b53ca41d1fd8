/** The partner's webhook receiver that the chaos run and the upgrade check keep. */
import http from 'node:http';
import { verifyWebhook } from '../src/client/webhooks';
import { listenOnLoopback } from '../src/main/loopback';

/** A delivery to `webhookReceiver`: the path it was sent to, and its event's id once verified, or why it did not verify. */
export type Delivery = { path: string; id: string } | { path: string; error: string };

/**
 * A partner's webhook receiver on a free loopback port: each delivery's body is read whole and
 * verified with the secret of its path (`secretOf`; none: 404), and `answer` gives the status it
 * is answered with.
 */
export async function webhookReceiver(secretOf: (path: string) => string | undefined, answer: (delivery: Delivery) => number): Promise<{ url: string; server: http.Server }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const secret = secretOf(path);
      if (secret === undefined) return res.writeHead(404).end();
      let delivery: Delivery;
      try {
        delivery = { path, id: verifyWebhook<unknown>(Buffer.concat(chunks), req.headers as Record<string, string>, secret).id };
      } catch (err) {
        delivery = { path, error: (err as Error).message };
      }
      res.writeHead(answer(delivery)).end();
    });
  });
  return { ...(await listenOnLoopback(server)), server };
}
