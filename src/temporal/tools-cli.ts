/** `node dist/src/temporal/tools-cli.js cli|test-server|model|opensearch|stripe-mock|mailpit|promtool|caddy|bundle <file>`: fetch or build a tool into the cache (or the workflow bundle), print its path. */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../config';
import { ensureModelFiles } from '../search/model-files';
import { ensureCaddy, ensureMailpit, ensurePromtool, ensureStripeMock, ensureTemporalCli, ensureTestServer, writeWhole } from './tools';

async function main(): Promise<void> {
  const config = loadConfig();
  const what = process.argv[2];
  if (what === 'test-server') {
    process.stdout.write(`${await ensureTestServer(config.toolCacheDir)}\n`);
  } else if (what === 'model') {
    process.stdout.write(`${(await ensureModelFiles(config.toolCacheDir)).dir}\n`);
  } else if (what === 'bundle') {
    // The worker's workflow bundle, built ahead (the image's build): WORKFLOW_BUNDLE points the worker at it.
    const file = process.argv[3];
    if (!file) throw new Error('usage: tools-cli bundle <file.js>');
    const { freshPrebuiltBundle, serviceWorkflowBundle, workflowSourcesDigest } = await import('./worker.js');
    // Made again only when the compiled workflows changed (npm test's pretest runs this each time).
    if (!freshPrebuiltBundle(file)) {
      // The old digest goes first and each file is written whole before it takes its name: a run
      // cut short in between leaves no digest, so no bundle passes for current that is not.
      rmSync(`${file}.digest`, { force: true });
      const digest = workflowSourcesDigest();
      const { code } = await serviceWorkflowBundle();
      writeWhole(file, (partial) => writeFileSync(partial, code));
      writeWhole(`${file}.digest`, (partial) => writeFileSync(partial, `${digest}\n`));
    }
    process.stdout.write(`${file}\n`);
  } else if (what === 'opensearch') {
    // The local OpenSearch node's jars and launcher, set up ahead (npm test's pretest): the test
    // lanes would otherwise set it up at once, each in the same directory.
    const { ensureOpenSearch } = await import('../search/opensearch/local-node.js');
    process.stdout.write(`${path.dirname((await ensureOpenSearch(config.toolCacheDir)).log4jConfig)}\n`);
  } else if (what === 'cli') {
    const cli = await ensureTemporalCli(config.toolCacheDir, config.temporal.cliPath);
    if (!cli) throw new Error('no Temporal CLI found and no Go toolchain to build one');
    process.stdout.write(`${cli}\n`);
  } else if (what === 'stripe-mock') {
    const mock = await ensureStripeMock(config.toolCacheDir);
    if (!mock) throw new Error('stripe-mock is built with Go, and there is no Go toolchain here');
    process.stdout.write(`${mock}\n`);
  } else if (what === 'promtool') {
    const promtool = await ensurePromtool(config.toolCacheDir);
    if (!promtool) throw new Error('promtool is built with Go, and there is no Go toolchain here');
    process.stdout.write(`${promtool}\n`);
  } else if (what === 'caddy') {
    const caddy = await ensureCaddy(config.toolCacheDir);
    if (!caddy) throw new Error('Caddy is built with Go, and there is no Go toolchain here');
    process.stdout.write(`${caddy}\n`);
  } else if (what === 'mailpit') {
    const mailpit = await ensureMailpit(config.toolCacheDir);
    if (!mailpit) throw new Error('Mailpit is built with Go, and there is no Go toolchain here');
    process.stdout.write(`${mailpit}\n`);
  } else {
    throw new Error('usage: tools-cli cli|test-server|model|opensearch|stripe-mock|mailpit|promtool|caddy|bundle <file.js>');
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
