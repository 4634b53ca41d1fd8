/**
 * Sentence embeddings in-process: WordPiece tokens (@huggingface/tokenizers), the int8 ONNX
 * MiniLM (onnxruntime-node), mean pooling over real tokens and L2 normalisation, as
 * sentence-transformers computes them. 384 dimensions.
 */
import { readFileSync } from 'node:fs';
import { Tokenizer } from '@huggingface/tokenizers';
import * as ort from 'onnxruntime-node';
import type { ModelFiles } from './model-files';
import { inner } from 'simsimd';

export const DIMENSIONS = 384;
const MAX_TOKENS = 256;

export class Embedder {
  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly tokenizer: Tokenizer,
  ) {}

  static async load(files: ModelFiles): Promise<Embedder> {
    const tokenizer = new Tokenizer(JSON.parse(readFileSync(files.tokenizer, 'utf8')), JSON.parse(readFileSync(files.tokenizerConfig, 'utf8')));
    // No arena, no memory patterns: onnxruntime keeps what its largest batch took (~80 MiB more
    // after embedding an import's batches of 64, in a throwaway script of 2026-12-03) where each
    // run now takes and gives back its own; a single query's run took as long (2.4–3.5 ms) either
    // way. (The ~150 MiB a session holds from the start is the model's weights, int8 in the file,
    // made float by the graph optimisations that a run needs: ~50 ms a query without them.)
    const session = await ort.InferenceSession.create(files.model, { graphOptimizationLevel: 'all', enableCpuMemArena: false, enableMemPattern: false });
    return new Embedder(session, tokenizer);
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const encoded = texts.map((t) => {
      const ids = this.tokenizer.encode(t).ids as number[];
      return ids.length > MAX_TOKENS ? [...ids.slice(0, MAX_TOKENS - 1), ids[ids.length - 1]] : ids;
    });
    const batch = encoded.length;
    const width = Math.max(...encoded.map((e) => e.length));
    const ids = new BigInt64Array(batch * width);
    const mask = new BigInt64Array(batch * width);
    encoded.forEach((e, b) =>
      e.forEach((id, i) => {
        ids[b * width + i] = BigInt(id);
        mask[b * width + i] = 1n;
      }),
    );
    const out = await this.session.run({
      input_ids: new ort.Tensor('int64', ids, [batch, width]),
      attention_mask: new ort.Tensor('int64', mask, [batch, width]),
      token_type_ids: new ort.Tensor('int64', new BigInt64Array(batch * width), [batch, width]),
    });
    const hidden = out.last_hidden_state.data as Float32Array;
    return encoded.map((e, b) => {
      const v = new Float32Array(DIMENSIONS);
      for (let i = 0; i < e.length; i++) {
        const base = (b * width + i) * DIMENSIONS;
        for (let d = 0; d < DIMENSIONS; d++) v[d] += hidden[base + d];
      }
      let norm = 0;
      for (let d = 0; d < DIMENSIONS; d++) {
        v[d] /= e.length;
        norm += v[d] * v[d];
      }
      norm = Math.max(Math.sqrt(norm), 1e-12);
      for (let d = 0; d < DIMENSIONS; d++) v[d] /= norm;
      return v;
    });
  }

  /** Embeds many texts in batches of 64. */
  async embedAll(texts: string[], onProgress?: (done: number) => void): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += 64) {
      out.push(...(await this.embed(texts.slice(i, i + 64))));
      onProgress?.(out.length);
    }
    return out;
  }
}

/**
 * The cosine of two unit vectors: their dot product, by SimSIMD (SIMD in native code: ~0.3 µs for
 * 384 dimensions against ~1.2 µs for a JavaScript loop; a search takes thousands).
 */
export function cosine(a: Float32Array, b: Float32Array): number {
  return inner(a, b);
}
