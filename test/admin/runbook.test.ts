import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(__dirname, '../../..');

/**
 * The runbook names only commands that exist, with options they take: each `admin …` line of
 * docs/operators/runbook.md is checked against the built CLI's own help (its acts are run by the
 * tests of each capability: test/admin, test/orders/live-transfers, test/checkout/service-refund,
 * test/finance, test/auth/keyring, test/workflows).
 */
describe('the runbook’s admin commands are the CLI’s', () => {
  const runbook = readFileSync(path.join(root, 'docs/operators/runbook.md'), 'utf8');
  // `admin <command> [<sub>] …` wherever it appears: in code blocks and inline code.
  const uses = [...runbook.matchAll(/(?:^|`)admin ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)?)((?: [^`\n]*)?)/gm)].map((m) => ({ words: m[1]!.split(' '), rest: m[2] ?? '' }));

  it('names at least the commands an operator needs on call', () => {
    const named = new Set(uses.map((u) => u.words[0]));
    for (const command of ['order', 'reconcile', 'payouts', 'keys', 'webhooks', 'workflows', 'partner']) assert.ok(named.has(command), command);
  });

  it('each one is a command of `admin`, and each option it shows is one that command takes', async function () {
    this.timeout(120_000);
    const cli = path.join(root, 'dist/src/admin/cli.js');
    const help = new Map<string, string>();
    const helpOf = async (words: string[]) => {
      const key = words.join(' ');
      if (!help.has(key)) help.set(key, (await run(process.execPath, [cli, ...words, '--help'])).stdout);
      return help.get(key)!;
    };
    const commands = await helpOf([]);
    for (const { words, rest } of uses) {
      assert.match(commands, new RegExp(`^\\s+${words[0]}\\b`, 'm'), `admin has a command ${words[0]}`);
      // A command with subcommands must list the second word; otherwise the second word is an argument.
      const top = await helpOf([words[0]!]);
      const hasSubcommands = /^Commands:/m.test(top);
      if (hasSubcommands) assert.match(top, new RegExp(`^\\s+${words[1]}\\b`, 'm'), `admin ${words[0]} has a subcommand ${words[1]}`);
      const path = hasSubcommands ? words : [words[0]!];
      const text = path.length === 1 ? top : await helpOf(path);
      for (const option of rest.match(/--[a-z][a-z-]*/g) ?? []) assert.match(text, new RegExp(`${option}\\b`), `admin ${path.join(' ')} takes ${option}`);
    }
  });
});
