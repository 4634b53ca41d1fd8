/**
 * How a saved HNSW graph sits in the data directory: each graph under a new name
 * (`<file>.<stamp>`), and `<file>.names.json` holding the names of its slots and naming that very
 * graph, written aside and renamed into place once the graph is complete. A crash at any point
 * leaves a names file and the graph it was written with. Used by the search process's main
 * thread (to read a saved graph's names at start, and to remove graphs saved another way) and by
 * the build worker (which writes graphs and names files); imports nothing but fs.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';

/** Each slot's name and segmented label, or null for a free slot. */
export type SlotNames = Array<[string, string] | null>;

/** Which slots a graph holds, from its names: 1 for a named slot, 0 for a free one (or a hole). */
export function membersOf(names: ArrayLike<[string, string] | null | undefined>): Uint8Array {
  return Uint8Array.from(names, (n) => (n ? 1 : 0));
}

/** A new file name for a graph of `file` (in its directory, which is made). */
export function newGraphFile(file: string): string {
  mkdirSync(path.dirname(file), { recursive: true });
  return `${file}.${Date.now().toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`;
}

/** The saved names of `file`'s slots and the graph they were written with, if both are there. */
export function readNames(file: string): { size: number; graph: string; names: SlotNames } | undefined {
  const namesFile = `${file}.names.json`;
  if (!existsSync(namesFile)) return undefined;
  try {
    const saved = JSON.parse(readFileSync(namesFile, 'utf8')) as { size: number; graph?: string; names: SlotNames };
    const graph = path.join(path.dirname(file), saved.graph ?? path.basename(file));
    return existsSync(graph) ? { size: saved.size, graph, names: saved.names } : undefined;
  } catch {
    return undefined;
  }
}

/** Flushes a file (or a directory's entries) to the disk. */
function flush(file: string): void {
  const fd = openSync(file, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes the names of a saved graph's slots, naming that graph (aside, then renamed into place),
 * then removes the older graphs of `file`, but `keep` (the graph in use, which its search worker
 * may have to map again; its owner removes it once another is in use). The graph, the names and
 * the rename reach the disk before any older graph is removed, so a power loss, too, leaves a
 * names file and its graph.
 */
export function commitGraph(file: string, graphFile: string, size: number, names: SlotNames, keep?: string): void {
  const dir = path.dirname(file);
  const graph = path.basename(graphFile);
  flush(graphFile);
  writeFileSync(`${file}.names.json.tmp`, JSON.stringify({ size, graph, names }));
  flush(`${file}.names.json.tmp`);
  renameSync(`${file}.names.json.tmp`, `${file}.names.json`);
  flush(dir);
  for (const old of readdirSync(dir)) {
    if ((old === path.basename(file) || old.startsWith(`${path.basename(file)}.`)) && old !== graph && !old.startsWith(`${path.basename(file)}.names.json`) && path.join(dir, old) !== keep) rmSync(path.join(dir, old), { force: true });
  }
}

/**
 * Removes the graphs and names files saved another way (another GRAPH_FORMAT, or none, as before
 * the format was in the name) beside `file` (`<stem>.<format>.usearch`): once a graph of this
 * format is in use they are never read again, and at 1M names each is ~0.9 GB.
 */
export async function removeOtherFormats(file: string, format: string): Promise<void> {
  const dir = path.dirname(file);
  const own = path.basename(file);
  const stem = own.slice(0, -`.${format}.usearch`.length);
  for (const entry of await readdir(dir)) {
    if (entry.startsWith(`${stem}.`) && entry.includes('.usearch') && entry !== own && !entry.startsWith(`${own}.`)) await rm(path.join(dir, entry), { force: true });
  }
}
