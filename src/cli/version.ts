import { readFileSync } from 'node:fs';

/** The package version, read from package.json (two levels up from both src/cli and dist/cli). */
export const VERSION: string = (() => {
  try {
    return JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version as string;
  } catch {
    return 'unknown';
  }
})();
