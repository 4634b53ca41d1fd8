/**
 * The API's HTTP server. What Node's HTTP parser refuses before the app sees it (a raw non-ASCII
 * byte in the URL, a space in a header name, headers over Node's size limit, headers too slow to
 * arrive) is answered as every other error is (CONTRACT §2): the contract's error body with
 * `doc_url`, `Content-Type: application/json` and an `X-Request-Id` equal to its `request_id`,
 * instead of Node's bare status line. The connection then closes, as Node's own answer does: what
 * follows a malformed request on it cannot be trusted.
 */
import http, { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBody, errorDocUrl } from './errors';
import { newRequestId } from './middleware/request-id';

/** Seconds an idle keep-alive connection stays open: past a load balancer's usual 60, so the balancer closes first. */
const KEEP_ALIVE_SECONDS = 65;

/** How long a refused request's connection may stay half-open after the answer, for the client to read it. */
const CLOSE_AFTER_REFUSAL_MS = 5_000;

/** The status Node answers for each refusal of its parser, and what the partner is told. */
function refusal(code: string | undefined): { status: number; message: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: `the request's headers are larger than the ${http.maxHeaderSize} bytes this server reads` };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, message: 'the body\'s chunk extensions are larger than this server reads' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, message: 'the request did not arrive in time' };
    case 'HPE_INVALID_URL':
      return { status: 400, message: 'the request is not valid HTTP: the URL holds a character that must be percent-encoded (RFC 3986)' };
    case 'HPE_INVALID_HEADER_TOKEN':
      return { status: 400, message: 'the request is not valid HTTP: a header name holds a character not allowed there' };
    default:
      return { status: 400, message: 'the request is not valid HTTP/1.1' };
  }
}

/** Answers a request Node's parser refused; `origin` is where /docs lives (for `doc_url`). */
export function answerClientError(origin: () => string): (err: Error & { code?: string }, socket: Duplex) => void {
  return (err, socket) => {
    // Gone, or an answer on this connection already under way: nothing can be written cleanly.
    const answering = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (err.code === 'ECONNRESET' || !socket.writable || answering) {
      socket.destroy();
      return;
    }
    const { status, message } = refusal(err.code);
    const requestId = newRequestId();
    const { error } = errorBody('validation_error', message, requestId);
    const body = JSON.stringify({ error: { ...error, doc_url: errorDocUrl(origin(), 'validation_error') } });
    // Closed from here in any case: a client that never closes its side holds nothing for long.
    setTimeout(() => socket.destroy(), CLOSE_AFTER_REFUSAL_MS).unref();
    socket.end(
      [
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
        'Content-Type: application/json; charset=utf-8',
        `Content-Length: ${Buffer.byteLength(body)}`,
        `X-Request-Id: ${requestId}`,
        'Cache-Control: no-store',
        'Connection: close',
        '',
        body,
      ].join('\r\n'),
    );
  };
}

/** An HTTP server for the API's Koa app; `origin` as for answerClientError (read when a refusal is answered, so it may name the port listened on). */
export function createApiServer(handler: http.RequestListener, origin: () => string): http.Server {
  const server = http.createServer(handler);
  server.keepAliveTimeout = KEEP_ALIVE_SECONDS * 1000;
  server.on('clientError', answerClientError(origin));
  return server;
}
