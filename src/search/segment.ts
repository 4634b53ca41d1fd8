/**
 * Domain labels are run-together words (`cryptowallet`, `espressobar`): split them into words
 * with a frequency-ranked English word list (wordsninja) before embedding.
 */
// wordsninja ships no types; its surface is two methods.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const WordsNinja = require('wordsninja') as new () => { loadDictionary(): Promise<void>; addWords(words: string | string[]): void; splitSentence(s: string): string[] };

/** Words of the trade the general list splits badly. */
const EXTRA_WORDS = ['nft', 'crypto', 'saas', 'ai', 'app', 'hq', 'io', 'vpn', 'seo', 'dao', 'defi', 'ev', 'diy', 'vr', 'ar', 'pet', 'vet'];

let ninja: Promise<InstanceType<typeof WordsNinja>> | undefined;

async function splitter() {
  ninja ??= (async () => {
    const n = new WordsNinja();
    await n.loadDictionary();
    n.addWords(EXTRA_WORDS);
    return n;
  })();
  return ninja;
}

/** `coffeejoy` -> `coffee joy`; digits and hyphens separate words too. */
export async function segmentLabel(label: string): Promise<string> {
  const n = await splitter();
  return label
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter(Boolean)
    .map((part) => n.splitSentence(part).join(' '))
    .join(' ');
}
