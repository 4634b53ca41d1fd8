/** What the suite's Mailpit received (its API: GET /api/v1/search, GET /api/v1/message/<id>). */
import { getStack } from './stack';
import { waitFor } from './wait';

export interface MailMessage {
  ID: string;
  Subject: string;
  Text: string;
  HTML: string;
  To: Array<{ Address: string }>;
  MessageID: string;
}

function inbox(): string {
  const mail = getStack().mail;
  if (!mail) throw new Error('the suite has no Mailpit (no Go to build it)');
  return mail.inboxUrl;
}

/** Every message sent to `address`, newest first, whole. */
export async function messagesTo(address: string): Promise<MailMessage[]> {
  const found = (await (await fetch(`${inbox()}/api/v1/search?query=${encodeURIComponent(`to:"${address}"`)}`)).json()) as { messages: Array<{ ID: string }> };
  return Promise.all(found.messages.map(async (m) => (await (await fetch(`${inbox()}/api/v1/message/${m.ID}`)).json()) as MailMessage));
}

/** The first message to `address` whose subject matches, waiting for it (real time: sending is a worker's activity). */
export async function emailTo(address: string, subject: RegExp, timeoutMs = 30_000): Promise<MailMessage> {
  const all = await waitFor(() => messagesTo(address), (list) => list.some((m) => subject.test(m.Subject)), timeoutMs, `an email to ${address} matching ${subject}`);
  return all.find((m) => subject.test(m.Subject))!;
}

/** The first link in an email's plain text that starts with `prefix`. */
export function linkIn(message: MailMessage, prefix: string): string {
  const link = message.Text.split(/\s+/).find((word) => word.startsWith(prefix));
  if (!link) throw new Error(`no link starting ${prefix} in "${message.Subject}":\n${message.Text}`);
  return link;
}
