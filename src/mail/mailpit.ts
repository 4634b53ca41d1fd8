/**
 * A local Mailpit (an SMTP server with a web inbox and a JSON API): what `npm start` sends mail
 * to when SMTP_URL is not set, and what the tests read sent mail from. Built with Go into the tool
 * cache (src/temporal/tools.ts). Its messages are kept in DATA_DIR (`mailpit.db`) when given one.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { recentOutput } from '../main/child-process';

export interface Mailpit {
  smtpUrl: string;
  /** The web inbox and its API (`/api/v1/…`). */
  inboxUrl: string;
  pid: number;
  exited: Promise<string>;
  stop(): Promise<void>;
}

async function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export async function startMailpit(binary: string, options: { smtpPort: number; uiPort: number; database?: string }): Promise<Mailpit> {
  for (const port of [options.smtpPort, options.uiPort]) {
    if (await portAnswers(port)) throw new Error(`port ${port} is taken (a Mailpit of an earlier start?): stop it, or set MAILPIT_SMTP_PORT and MAILPIT_UI_PORT, or SMTP_URL`);
  }
  const args = ['--smtp', `127.0.0.1:${options.smtpPort}`, '--listen', `127.0.0.1:${options.uiPort}`, '--smtp-auth-accept-any', '--smtp-auth-allow-insecure', '--disable-version-check'];
  if (options.database) args.push('--database', options.database);
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output = recentOutput(child, 30);
  const exited = once(child, 'exit').then(([code, signal]) => (code === null ? `signal ${String(signal)}` : `code ${String(code)}`));
  const stopOnExit = () => child.exitCode === null && child.kill('SIGTERM');
  process.once('exit', stopOnExit);
  void exited.then(() => process.off('exit', stopOnExit));
  const deadline = Date.now() + 20_000;
  let gone = false;
  void exited.then(() => (gone = true));
  while (!(await portAnswers(options.smtpPort)) || !(await portAnswers(options.uiPort))) {
    if (gone) throw new Error(`Mailpit stopped at its start:\n${output.join('\n')}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`Mailpit did not listen within 20 s:\n${output.join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    smtpUrl: `smtp://127.0.0.1:${options.smtpPort}`,
    inboxUrl: `http://127.0.0.1:${options.uiPort}`,
    pid: child.pid!,
    exited,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
