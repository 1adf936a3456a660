/**
 * Reads one JSON document held in bytes, item by item, so a `kubectl get ... -o json` List larger than the
 * longest string a JavaScript engine can hold (~512 MiB) still parses.
 *
 * `parseJsonBytes(buf)` returns what `JSON.parse(buf.toString())` would, without ever making the whole text
 * one string: a top-level object is read field by field, and the elements of its "items" array (or of a
 * top-level array) are parsed one at a time from their own byte range. An `item` callback sees each element
 * right after it is parsed and returns what to keep (a loader keeps less of each Pod, for one).
 *
 * Finding an element's end. `kubectl -o json` (and any indenting printer) closes each element with a line
 * holding only its own indentation and "}". Raw newlines cannot occur inside JSON strings, so that line is
 * found with one native byte search, and JSON.parse of the range both parses and checks it: a range that
 * parses as an object starting at the element's "{" ends exactly where the element does. When the guess
 * fails (compact JSON, odd indentation), an exact scanner takes over for the rest of the array: it tracks
 * strings (escapes included) and bracket depth, and jumps through long strings with a native search for the
 * next quote.
 *
 * Errors are InputErrors naming the byte offset and line; callers prefix the file name.
 */
import { InputError } from '../errors.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const NEWLINE = 0x0a;

/** A string shorter than this is scanned byte by byte; longer ones by a native search for the next quote. */
const SHORT_STRING = 48;
/**
 * Array elements are parsed in groups of about this many bytes (one JSON.parse each). Below 100 KiB on
 * purpose: V8 allocates what JSON.parse builds from a longer text directly in the old generation, where every
 * dropped field (a Pod's spec, say) would wait for a full mark-compact; below it, garbage dies young.
 */
export const BATCH_BYTES = 64 * 1024;
/** After this many wrong guesses in one array, the exact scanner reads the rest of it. */
const MAX_FAILURES = 8;

export interface JsonBytesOptions {
  /**
   * Called with each element of the top-level object's "items" array (or of a top-level array) right after
   * it is parsed; the return value is kept in its place. `head` holds the top-level fields read so far
   * (for `kubectl` output: apiVersion; for API output: kind, apiVersion, metadata).
   */
  item?: (value: unknown, head: Readonly<Record<string, unknown>>) => unknown;
  /** Elements are parsed in groups of about this many bytes (default BATCH_BYTES; tests make it small). */
  batchBytes?: number;
}

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** 1-based line of a byte offset (only computed for error messages). */
function lineOf(buf: Uint8Array, offset: number): number {
  let line = 1;
  let i = -1;
  const b = buf as Buffer;
  for (;;) {
    i = b.indexOf(NEWLINE, i + 1);
    if (i === -1 || i >= offset) return line;
    line++;
  }
}

/** Control characters (and line separators) escaped, so a message stays one line whatever the input held. */
function oneLine(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, (c) => (c === '\n' ? '\\n' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}

/** A field name for a message: quoted, at most 40 characters. */
function fieldName(k: string): string {
  return JSON.stringify(k.length > 40 ? `${k.slice(0, 40)}…` : k);
}

class Reader {
  readonly buf: Buffer;
  readonly end: number;
  readonly opts: JsonBytesOptions;

  constructor(buf: Uint8Array, opts: JsonBytesOptions) {
    this.buf = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
    this.end = this.buf.length;
    this.opts = opts;
  }

  fail(at: number, what: string): never {
    const pos = Math.min(at, this.end);
    throw new InputError(`not valid JSON at byte ${pos} (line ${lineOf(this.buf, pos)}): ${oneLine(what)}`);
  }

  ws(i: number): number {
    const buf = this.buf;
    const end = this.end;
    while (i < end && isWs(buf[i])) i++;
    return i;
  }

  /** JSON.parse of buf[start, end). */
  parse(start: number, end: number): unknown {
    let text: string;
    try {
      text = this.buf.toString('utf8', start, end);
    } catch {
      this.fail(start, `a single value of ${end - start} bytes is larger than the longest string this runtime can hold`);
    }
    try {
      return JSON.parse(text);
    } catch (e) {
      const msg = String((e as Error)?.message ?? e);
      const m = /position (\d+)/.exec(msg);
      const at = m ? start + Buffer.byteLength(text.slice(0, Number(m[1])), 'utf8') : start;
      const reason = msg.replace(/ in JSON at position \d+.*$/, '').replace(/^Unexpected end of JSON input$/, 'unexpected end of input');
      this.fail(at, reason);
    }
  }

  /** buf[i] is the opening quote; returns the index after the closing one. */
  string(i: number): number {
    const buf = this.buf;
    const end = this.end;
    const first = i + 1;
    let k = first;
    const short = Math.min(end, first + SHORT_STRING);
    while (k < short) {
      const c = buf[k];
      if (c === QUOTE) return k + 1;
      if (c === BACKSLASH) k += 2;
      else k++;
    }
    // k is at a character boundary (never just after an escaping backslash).
    for (;;) {
      const q = k < end ? buf.indexOf(QUOTE, k) : -1;
      if (q === -1) this.fail(end, 'unterminated string (truncated file?)');
      let n = 0;
      for (let b = q - 1; b >= first && buf[b] === BACKSLASH; b--) n++;
      if ((n & 1) === 0) return q + 1;
      k = q + 1;
    }
  }

  /** buf[i] starts a value (not whitespace); returns the index after it. Brackets are counted, not matched: JSON.parse of the range checks the rest. */
  skip(i: number): number {
    const buf = this.buf;
    const end = this.end;
    const c0 = buf[i];
    if (c0 === QUOTE) return this.string(i);
    if (c0 === LBRACE || c0 === LBRACKET) {
      let depth = 0;
      while (i < end) {
        const c = buf[i];
        if (c === QUOTE) {
          i = this.string(i);
          continue;
        }
        if (c === LBRACE || c === LBRACKET) depth++;
        else if (c === RBRACE || c === RBRACKET) {
          if (--depth === 0) return i + 1;
        }
        i++;
      }
      this.fail(end, `unexpected end of input: ${depth} unclosed bracket(s) (truncated file?)`);
    }
    // a number, true, false or null
    const start = i;
    while (i < end) {
      const c = buf[i];
      if (isWs(c) || c === COMMA || c === RBRACE || c === RBRACKET || c === COLON || c === LBRACE || c === LBRACKET || c === QUOTE) break;
      i++;
    }
    if (i === start) this.fail(i, `unexpected "${String.fromCharCode(c0)}"`);
    return i;
  }

  /** buf[i] is "["; returns the parsed array (each element through the item callback) and the index after "]". */
  array(i: number, head: Record<string, unknown>): [unknown[], number] {
    const buf = this.buf;
    const end = this.end;
    const map = this.opts.item;
    const batch = Math.max(1, this.opts.batchBytes ?? BATCH_BYTES);
    const out: unknown[] = [];
    const open = i;
    i = this.ws(i + 1);
    if (i >= end) this.fail(end, 'unexpected end of input in an array (truncated file?)');
    if (buf[i] === RBRACKET) return [out, i + 1];

    // The closing line of the first element: "\n" + its indentation + "}".
    let close: Buffer | undefined;
    const nl = buf.lastIndexOf(NEWLINE, i);
    if (buf[i] === LBRACE && nl > open) {
      let indentOk = true;
      for (let k = nl + 1; k < i; k++) if (buf[k] !== 0x20 && buf[k] !== 0x09) indentOk = false;
      if (indentOk) {
        close = Buffer.allocUnsafe(i - nl + 1);
        buf.copy(close, 0, nl, i);
        close[close.length - 1] = RBRACE;
      }
    }
    /** Elements before this offset are read one by one (a guess there failed or found nothing). */
    let exactUntil = -1;
    let failures = 0;

    for (;;) {
      const start = i;
      let stop = -1;
      if (close !== undefined && start >= exactUntil && buf[start] === LBRACE) {
        // The last closing line within one batch ends the last whole element of the batch (if the guess is right).
        const limit = Math.min(end, start + batch);
        const rel = buf.subarray(start, limit).lastIndexOf(close);
        if (rel === -1) {
          exactUntil = limit; // an element longer than a batch, or not laid out this way
        } else {
          const e = start + rel + close.length;
          const values = this.tryParseElements(start, e);
          if (values !== undefined) {
            for (let k = 0; k < values.length; k++) out.push(map ? map(values[k], head) : values[k]);
            stop = e;
          } else if (++failures >= MAX_FAILURES) {
            close = undefined; // not laid out as guessed: the exact scanner from here on
          } else {
            exactUntil = e;
          }
        }
      }
      if (stop === -1) {
        stop = this.skip(start);
        const value = this.parse(start, stop);
        out.push(map ? map(value, head) : value);
      }
      i = this.ws(stop);
      if (i >= end) this.fail(end, 'unexpected end of input in an array (truncated file?)');
      const c = buf[i];
      if (c === RBRACKET) return [out, i + 1];
      if (c !== COMMA) this.fail(i, `expected "," or "]" after array element ${out.length}`);
      i = this.ws(i + 1);
      if (i >= end) this.fail(end, 'unexpected end of input in an array (truncated file?)');
    }
  }

  /**
   * buf[start, end) as the elements of an array: JSON.parse("[" + text + "]"). undefined when that is not
   * valid JSON. A range starting at an element and ending at the "}" closing some element parses exactly
   * when it holds whole elements separated by commas, so success proves the guessed boundary.
   */
  tryParseElements(start: number, end: number): unknown[] | undefined {
    try {
      return JSON.parse(`[${this.buf.toString('utf8', start, end)}]`) as unknown[];
    } catch {
      return undefined;
    }
  }

  document(): unknown {
    const buf = this.buf;
    const end = this.end;
    let i = 0;
    if (end >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) i = 3;
    i = this.ws(i);
    if (i >= end) this.fail(end, 'empty document');
    let value: unknown;
    const c = buf[i];
    if (c === LBRACKET) {
      [value, i] = this.array(i, {});
    } else if (c === LBRACE) {
      [value, i] = this.object(i);
    } else {
      const stop = this.skip(i);
      value = this.parse(i, stop);
      i = stop;
    }
    i = this.ws(i);
    if (i < end) this.fail(i, 'unexpected data after the end of the document');
    return value;
  }

  /** The top-level object: fields one by one, "items" streamed when it is an array. */
  object(i: number): [Record<string, unknown>, number] {
    const buf = this.buf;
    const end = this.end;
    const out: Record<string, unknown> = {};
    i = this.ws(i + 1);
    if (i >= end) this.fail(end, 'unexpected end of input in an object (truncated file?)');
    if (buf[i] === RBRACE) return [out, i + 1];
    for (;;) {
      if (buf[i] !== QUOTE) this.fail(i, 'expected a field name in double quotes');
      const keyEnd = this.string(i);
      const key = this.parse(i, keyEnd) as string;
      i = this.ws(keyEnd);
      if (buf[i] !== COLON) this.fail(i, `expected ":" after field name ${fieldName(key)}`);
      i = this.ws(i + 1);
      if (i >= end) this.fail(end, `unexpected end of input: no value for ${fieldName(key)} (truncated file?)`);
      let value: unknown;
      if (key === 'items' && buf[i] === LBRACKET) {
        [value, i] = this.array(i, out);
      } else {
        const stop = this.skip(i);
        value = this.parse(i, stop);
        i = stop;
      }
      Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
      i = this.ws(i);
      if (i >= end) this.fail(end, 'unexpected end of input in an object (truncated file?)');
      if (buf[i] === RBRACE) return [out, i + 1];
      if (buf[i] !== COMMA) this.fail(i, `expected "," or "}" after the value of ${fieldName(key)}`);
      i = this.ws(i + 1);
    }
  }
}

/** What JSON.parse would return for these bytes (UTF-8, optional BOM), read item by item; see the module comment. */
export function parseJsonBytes(buf: Uint8Array, opts: JsonBytesOptions = {}): unknown {
  return new Reader(buf, opts).document();
}
