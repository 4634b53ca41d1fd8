/**
 * The reference viewer's bundle (Redoc's standalone build), copied from the redoc package (a
 * development dependency) into dist/ by `npm run build`, so the service and its image carry the
 * one file and none of the package's dependencies. Run as a script, it copies.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';

/** dist/docs-assets/redoc.standalone.js, from the compiled dist/src/pages. */
export const REDOC_BUNDLE = path.resolve(__dirname, '..', '..', 'docs-assets', 'redoc.standalone.js');

if (require.main === module) {
  mkdirSync(path.dirname(REDOC_BUNDLE), { recursive: true });
  copyFileSync(require.resolve('redoc/bundles/redoc.standalone.js'), REDOC_BUNDLE);
}
