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
 * A range holding a backslash is not given to JSON.parse as a whole: V8 can give an escaped object key the name
 * of a like key parsed earlier (ESCAPED_KEYS). Its nested values without a backslash still are; the rest is
 * read here, so such elements (kubectl's managedFields keys, `k:{\"type\":...}`, are escaped) cost about three
 * times as much as a native parse.
 *
 * Streamed (parseJsonStream, parseJsonStreamAhead), the bytes are held a window at a time. The reader itself
 * is synchronous; where it needs more bytes (before an element when little of the window is left, or in the
 * middle of a value) its generators yield, and the caller refills the window: at once from a ByteSource, or,
 * reading ahead, with the bytes an AsyncByteSource read into a second buffer while the window was parsed.
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

const IS_QUOTE = 1;
const IS_OPEN = 2;
const IS_CLOSE = 3;
/** What a byte is to skip(): 0 nothing it tracks, else a quote, an opening or a closing bracket. */
const BYTE_CLASS = new Uint8Array(256);
BYTE_CLASS[QUOTE] = IS_QUOTE;
BYTE_CLASS[LBRACE] = IS_OPEN;
BYTE_CLASS[LBRACKET] = IS_OPEN;
BYTE_CLASS[RBRACE] = IS_CLOSE;
BYTE_CLASS[RBRACKET] = IS_CLOSE;

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

/**
 * Which fields of an element to keep when reading it field by field (JsonBytesOptions.fields): the element is
 * walked without parsing what is not kept (strings and brackets are tracked so its end is found exactly; the
 * values skipped are not otherwise checked), and only the kept values are parsed.
 */
export interface ElementFields {
  /** Top-level fields kept whole. */
  whole: readonly string[];
  /** Top-level fields that are mappings of which only these fields are kept (a value that is no mapping is kept whole). */
  picked: Readonly<Record<string, readonly string[]>>;
  /**
   * Given the kept fields, whether the element may stay that way; false: it is parsed whole and goes through
   * `item` like any other element.
   */
  accept: (kept: Readonly<Record<string, unknown>>, head: Readonly<Record<string, unknown>>) => boolean;
  /** Called with the kept fields of an element `accept` took, to drop, in place, what of them is not needed either. */
  finish?: (kept: Record<string, unknown>) => void;
}

/** Where a streamed document's bytes come from (parseJsonStream). */
export interface ByteSource {
  /** Reads up to `length` bytes into buf at `offset`; 0 at the end. */
  read(buf: Buffer, offset: number, length: number): number;
  /** The 1-based line of a byte offset, for messages (re-reads the source); without it messages give the offset only. */
  lineAt?(offset: number): number;
}

/**
 * Where a document read ahead comes from (parseJsonStreamAhead): reads at a position, settled off the main
 * thread (a file's reads run on libuv's thread pool), never two at a time.
 */
export interface AsyncByteSource {
  /** Reads up to `length` bytes of the document from byte `position` into buf at `offset`; 0 at the end. */
  readAt(buf: Buffer, offset: number, length: number, position: number): Promise<number>;
  /** As ByteSource.lineAt. */
  lineAt?(offset: number): number;
}

export interface JsonBytesOptions {
  /**
   * Called with each element of the top-level object's "items" array (or of a top-level array) right after
   * it is parsed; the return value is kept in its place. `head` holds the top-level fields read so far
   * (for `kubectl` output: apiVersion; for API output: kind, apiVersion, metadata).
   */
  item?: (value: unknown, head: Readonly<Record<string, unknown>>) => unknown;
  /** Elements are parsed in groups of about this many bytes (default BATCH_BYTES; tests make it small). */
  batchBytes?: number;
  /** Read the elements that are mappings field by field, keeping only these fields where `accept` says so. */
  fields?: ElementFields;
}

/** Bytes of a streamed document held at a time, at first (more when one element is larger). */
export const WINDOW_BYTES = 16 * 1024 * 1024;
/** Before an element, the window is refilled when fewer bytes than this are left in it. */
const AHEAD_BYTES = 4 * 1024 * 1024;

/**
 * The reader's refills: document(), object(), array() and whole() yield the index from which the bytes held
 * are still needed and are resumed with by how much indices moved down, once the window is refilled. A caller
 * refills synchronously (parseJsonStream) or awaits a read ahead (parseJsonStreamAhead).
 */
type Refills<T> = Generator<number, T, number>;

/**
 * Why a range holding a backslash is not given to JSON.parse (and thrown inside Reader.exact for invalid JSON).
 * V8's JSON.parse (Node 24, V8 13.6; also 14.6) resolves an escaped object key through a property transition
 * an earlier parse left when the raw key text starts alike: once the
 * text {"h":[],"\\":0} is parsed, {"h":1,"\"":2} gives key `\` instead of `"` (nodejs/node#63785, V8 issue
 * 521080746; Node 24.21 here). The reader's own results were wrong that way when an element was parsed so. Ranges
 * without a backslash hold no escaped key and keep the native parse.
 */
const ESCAPED_KEYS: unique symbol = Symbol('escaped keys');

/** Thrown inside the reader when it reaches the end of the bytes held while the source has more. */
const NEED_MORE: unique symbol = Symbol('need more bytes');

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

interface Keys { names: readonly string[]; bytes: readonly Buffer[] }

function keysOf(names: readonly string[]): Keys {
  return { names, bytes: names.map((n) => Buffer.from(n, 'utf8')) };
}

/** Where array() is in its elements (Reader.elements). */
interface ArrayState {
  i: number;
  readonly out: unknown[];
  readonly head: Record<string, unknown>;
  /** The closing line of the first element, while guessed element ends are tried. */
  close: Buffer | undefined;
  exactUntil: number;
  failures: number;
  atElement: boolean;
  refilled: boolean;
}

class Reader {
  /** The bytes held: buf[0, end) is the document's [base, base + end). */
  buf: Buffer;
  end: number;
  base = 0;
  /** No more bytes than those held. */
  eof: boolean;
  /** Bytes come from a source, a window at a time. */
  readonly streamed: boolean;
  private readonly src: ByteSource | undefined;
  private readonly lineAt: ((offset: number) => number) | undefined;
  readonly opts: JsonBytesOptions;
  /** Before an element, the window is refilled when fewer bytes than this are left in it. */
  readonly aheadBytes: number;
  private readonly top: Keys | undefined;
  private readonly sub: Keys[] = [];
  /** Read ahead: the source, and the read in flight (none once the source's end is reached) into `spare` at `room`, of the bytes from base + end on. */
  private readonly asrc: AsyncByteSource | undefined;
  private ahead: Promise<number> | undefined;
  private spare: Buffer | undefined;
  /** Bytes kept free before those read ahead: the tail of the window goes there (at most aheadBytes at an element). */
  private readonly room: number = 0;

  constructor(buf: Uint8Array, opts: JsonBytesOptions, src?: ByteSource | { async: AsyncByteSource; spare: Buffer }) {
    this.buf = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
    this.streamed = src !== undefined;
    this.end = src ? 0 : this.buf.length;
    this.eof = !src;
    this.opts = opts;
    this.aheadBytes = AHEAD_BYTES;
    const f = opts.fields;
    if (f) {
      const picked = Object.keys(f.picked);
      this.top = keysOf([...f.whole, ...picked]);
      for (const k of this.top.names) this.sub.push(keysOf(Object.hasOwn(f.picked, k) ? f.picked[k]! : []));
    }
    if (src !== undefined && 'async' in src) {
      this.asrc = src.async;
      this.spare = src.spare;
      this.room = Math.min(AHEAD_BYTES, Math.floor(Math.min(this.buf.length, src.spare.length) / 4));
      this.aheadBytes = this.room;
      this.lineAt = src.async.lineAt;
    } else if (src !== undefined) {
      this.src = src;
      this.lineAt = src.lineAt;
      this.refill(0);
    }
  }

  fail(at: number, what: string): never {
    if (at >= this.end && !this.eof) throw NEED_MORE;
    const pos = Math.min(at, this.end);
    const abs = this.base + pos;
    const line = this.streamed ? this.lineAt?.(abs) : lineOf(this.buf, pos);
    throw new InputError(`not valid JSON at byte ${abs}${line !== undefined ? ` (line ${line})` : ''}: ${oneLine(what)}`);
  }

  /** A buffer twice as large as the window (at least WINDOW_BYTES) holding its bytes: one value is larger than the window. */
  private grow(): void {
    const grown = Buffer.allocUnsafe(Math.max(WINDOW_BYTES, this.buf.length * 2));
    this.buf.copy(grown, 0, 0, this.end);
    this.buf = grown;
  }

  /**
   * Drops the bytes before `keep`, then reads until the window is full (twice as large when `keep` is 0 and it
   * was full: one value larger than the window). Returns by how much indices moved down (`keep`).
   */
  refill(keep: number): number {
    const src = this.src!;
    if (keep > 0) {
      this.buf.copyWithin(0, keep, this.end);
      this.end -= keep;
      this.base += keep;
    }
    if (this.end === this.buf.length) this.grow();
    while (this.end < this.buf.length) {
      const n = src.read(this.buf, this.end, this.buf.length - this.end);
      if (n <= 0) { this.eof = true; break; }
      this.end += n;
    }
    return keep;
  }

  /** Read ahead: the first window (waited for), then the next bytes read ahead. */
  async start(): Promise<void> {
    await this.fill();
    this.readAhead();
  }

  /** Reads (waiting) from base + end until the window is full or the source ends. */
  private async fill(): Promise<void> {
    const src = this.asrc!;
    while (this.end < this.buf.length) {
      const n = await src.readAt(this.buf, this.end, this.buf.length - this.end, this.base + this.end);
      if (n <= 0) { this.eof = true; break; }
      this.end += n;
    }
  }

  /** Starts reading the bytes after the window into `spare` (after its room), unless the source has ended. */
  private readAhead(): void {
    if (this.eof) return;
    const spare = this.spare!;
    const read = this.asrc!.readAt(spare, this.room, spare.length - this.room, this.base + this.end);
    read.catch(() => undefined); // a failed read is reported where it is awaited
    this.ahead = read;
  }

  /**
   * refill() with the bytes read ahead: the window's tail from `keep` (at most `room` bytes: the usual case,
   * at an element) is copied in front of them and the two buffers swap; a longer tail (one value longer than
   * what is left) stays, the window grows as in refill() when it is full, and the bytes read ahead are appended
   * (read to full). Then the next read ahead starts. Returns by how much indices moved down (negative when up).
   */
  async refillAhead(keep: number): Promise<number> {
    const n = await this.ahead!;
    this.ahead = undefined;
    if (n <= 0) {
      this.eof = true;
      return 0;
    }
    const spare = this.spare!;
    const tail = this.end - keep;
    let shift: number;
    if (tail <= this.room) {
      const at = this.room - tail;
      this.buf.copy(spare, at, keep, this.end);
      this.spare = this.buf;
      this.buf = spare;
      shift = keep - at;
      this.end = this.room + n;
    } else {
      this.buf.copyWithin(0, keep, this.end);
      this.end = tail;
      shift = keep;
      if (this.end === this.buf.length) this.grow();
      const m = Math.min(n, this.buf.length - this.end);
      spare.copy(this.buf, this.end, this.room, this.room + m);
      this.end += m;
    }
    this.base += shift;
    // in the second case the bytes read ahead that did not fit are read again
    if (this.end < this.buf.length && tail > this.room) await this.fill();
    this.readAhead();
    return shift;
  }

  /** Waits for the read in flight, if any (before the source is closed). */
  async settle(): Promise<void> {
    const read = this.ahead;
    this.ahead = undefined;
    if (read !== undefined) await read.catch(() => 0);
  }

  ws(i: number): number {
    const buf = this.buf;
    const end = this.end;
    while (i < end && isWs(buf[i])) i++;
    return i;
  }

  /** buf[start, end) holds a backslash (a native search bounded to the range). */
  private hasEscape(start: number, end: number): boolean {
    return end > start && this.buf.subarray(start, end).indexOf(BACKSLASH) !== -1;
  }

  /** JSON.parse of buf[start, end) (read by exactValue when it holds an escape: see ESCAPED_KEYS). */
  parse(start: number, end: number): unknown {
    if (this.hasEscape(start, end)) {
      const got = this.exact(start, end, false);
      if (got !== undefined) return got[0];
      // not valid JSON: JSON.parse below names the error
    }
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
      // bytes past `end` may be left over from an earlier window: a quote there does not count
      let q = k < end ? buf.indexOf(QUOTE, k) : -1;
      if (q >= end) q = -1;
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
        if (c === NEWLINE) {
          // an indented layout: the run of spaces after a line break in one tight loop
          i++;
          while (i < end && buf[i] === 0x20) i++;
          continue;
        }
        const t = BYTE_CLASS[c]!;
        if (t === 0) {
          i++;
          continue;
        }
        if (t === IS_QUOTE) {
          i = this.string(i);
          continue;
        }
        if (t === IS_OPEN) depth++;
        else if (--depth === 0) return i + 1;
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
    if (i >= end && !this.eof) throw NEED_MORE;
    if (i === start) this.fail(i, `unexpected "${String.fromCharCode(c0)}"`);
    return i;
  }

  /** buf[i] is "["; returns the parsed array (each element through the item callback) and the index after "]". */
  *array(i: number, head: Record<string, unknown>): Refills<[unknown[], number]> {
    const fields = this.opts.fields;
    const out: unknown[] = [];
    let open: number;
    [open, i] = yield* this.whole(i, (at) => {
      const p = this.ws(at + 1);
      if (p >= this.end) this.fail(this.end, 'unexpected end of input in an array (truncated file?)');
      return [at, p];
    });
    if (this.buf[i] === RBRACKET) return [out, i + 1];

    // The closing line of the first element: "\n" + its indentation + "}".
    let close: Buffer | undefined;
    const nl = this.buf.lastIndexOf(NEWLINE, i);
    if (!fields && this.buf[i] === LBRACE && nl > open) {
      let indentOk = true;
      for (let k = nl + 1; k < i; k++) if (this.buf[k] !== 0x20 && this.buf[k] !== 0x09) indentOk = false;
      if (indentOk) {
        close = Buffer.allocUnsafe(i - nl + 1);
        this.buf.copy(close, 0, nl, i);
        close[close.length - 1] = RBRACE;
      }
    }
    const st: ArrayState = { i, out, head, close, exactUntil: -1, failures: 0, atElement: true, refilled: false };
    while (!this.elements(st)) {
      const shift: number = yield st.i;
      st.i -= shift;
      st.exactUntil -= shift;
      st.refilled = true;
    }
    return [out, st.i];
  }

  /**
   * array()'s loop over the elements from st.i on, in a plain method (the engine optimizes its loop in place,
   * which it does not in a generator): true at the array's "]" (st.i after it), false when the window must be
   * refilled, keeping the bytes from st.i, before it goes on.
   */
  private elements(st: ArrayState): boolean {
    const map = this.opts.item;
    const fields = this.opts.fields;
    const batch = Math.max(1, this.opts.batchBytes ?? BATCH_BYTES);
    const out = st.out;
    const head = st.head;
    let i = st.i;
    let close = st.close;
    /** Elements before this offset are read one by one (a guess there failed or found nothing). */
    let exactUntil = st.exactUntil;
    let failures = st.failures;
    /** i is at an element (true) or after one (false). */
    let atElement = st.atElement;
    /** The window was refilled just before: no refill before the element. */
    let refilled = st.refilled;

    for (;;) {
      if (!refilled && atElement && i > 0 && this.streamed && !this.eof && this.end - i < this.aheadBytes) {
        st.i = i; st.close = close; st.exactUntil = exactUntil; st.failures = failures; st.atElement = atElement;
        return false;
      }
      refilled = false;
      try {
        if (atElement) {
          const buf = this.buf;
          const end = this.end;
          const start = this.ws(i);
          if (start >= end) this.fail(end, 'unexpected end of input in an array (truncated file?)');
          let stop = -1;
          if (fields && buf[start] === LBRACE) {
            const [kept, e] = this.walk(start, head, fields);
            const value = kept ?? this.parse(start, e);
            out.push(kept !== undefined || !map ? value : map(value, head));
            stop = e;
          } else if (close !== undefined && start >= exactUntil && buf[start] === LBRACE) {
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
          i = stop;
          atElement = false;
        }
        const j = this.ws(i);
        if (j >= this.end) this.fail(this.end, 'unexpected end of input in an array (truncated file?)');
        const c = this.buf[j];
        if (c === RBRACKET) { st.i = j + 1; return true; }
        if (c !== COMMA) this.fail(j, `expected "," or "]" after array element ${out.length}`);
        i = j + 1;
        atElement = true;
      } catch (e) {
        if (e !== NEED_MORE) throw e;
        st.i = i; st.close = close; st.exactUntil = exactUntil; st.failures = failures; st.atElement = atElement;
        return false;
      }
    }
  }

  /** The bytes of buf[a, b) equal `k`. */
  private is(a: number, b: number, k: Buffer): boolean {
    if (b - a !== k.length) return false;
    const buf = this.buf;
    for (let x = 0; x < k.length; x++) if (buf[a + x] !== k[x]) return false;
    return true;
  }

  /** Which of `keys` the field name buf[q, e) (quotes included) is; -1 for none. */
  private keyIndex(q: number, e: number, keys: Keys): number {
    const buf = this.buf;
    let escaped = false;
    for (let x = q + 1; x < e - 1; x++) if (buf[x] === BACKSLASH || buf[x] < 0x20) { escaped = true; break; }
    if (!escaped) {
      for (let k = 0; k < keys.bytes.length; k++) if (this.is(q + 1, e - 1, keys.bytes[k]!)) return k;
      return -1;
    }
    return keys.names.indexOf(this.parse(q, e) as string);
  }

  /** A value at buf[i] (not whitespace): parsed, and the index after it. Plain strings are cut out without JSON.parse. */
  private value(i: number): [unknown, number] {
    const buf = this.buf;
    const e = this.skip(i);
    if (buf[i] === QUOTE) {
      let plain = true;
      for (let x = i + 1; x < e - 1; x++) if (buf[x] === BACKSLASH || buf[x] < 0x20) { plain = false; break; }
      if (plain) return [buf.toString('utf8', i + 1, e - 1), e];
    }
    return [this.parse(i, e), e];
  }

  /**
   * Walks the fields of the mapping at buf[i] ("{"), calling `field` with each field's key index in `keys` (-1:
   * not wanted) at its value; `field` returns the index after the value. Returns the index after "}".
   */
  private fieldsOf(i: number, keys: Keys, field: (k: number, at: number) => number): number {
    const buf = this.buf;
    const end = this.end;
    i = this.ws(i + 1);
    if (i >= end) this.fail(end, 'unexpected end of input in an object (truncated file?)');
    if (buf[i] === RBRACE) return i + 1;
    for (;;) {
      if (buf[i] !== QUOTE) this.fail(i, 'expected a field name in double quotes');
      const ke = this.string(i);
      const k = this.keyIndex(i, ke, keys);
      i = this.ws(ke);
      if (i >= end) this.fail(end, 'unexpected end of input in an object (truncated file?)');
      if (buf[i] !== COLON) this.fail(i, 'expected ":" after a field name');
      i = this.ws(i + 1);
      if (i >= end) this.fail(end, 'unexpected end of input: no value for a field (truncated file?)');
      i = field(k, i);
      i = this.ws(i);
      if (i >= end) this.fail(end, 'unexpected end of input in an object (truncated file?)');
      if (buf[i] === RBRACE) return i + 1;
      if (buf[i] !== COMMA) this.fail(i, 'expected "," or "}" after a field\'s value');
      i = this.ws(i + 1);
    }
  }

  /**
   * buf[i] is an element's "{": its kept fields (ElementFields), or undefined when `accept` refuses them (the
   * caller parses it whole), and the index after its "}".
   */
  walk(i: number, head: Readonly<Record<string, unknown>>, f: ElementFields): [Record<string, unknown> | undefined, number] {
    const top = this.top!;
    const got: unknown[] = new Array(top.names.length);
    const has: boolean[] = new Array(top.names.length).fill(false);
    const stop = this.fieldsOf(i, top, (k, at) => {
      if (k === -1) return this.skip(at);
      const sub = this.sub[k]!;
      has[k] = true;
      if (sub.names.length === 0 || this.buf[at] !== LBRACE) {
        const [v, e] = this.value(at);
        got[k] = v;
        return e;
      }
      const vals: unknown[] = new Array(sub.names.length);
      const seen: boolean[] = new Array(sub.names.length).fill(false);
      const e = this.fieldsOf(at, sub, (j, p) => {
        if (j === -1) return this.skip(p);
        const [v, e2] = this.value(p);
        vals[j] = v;
        seen[j] = true;
        return e2;
      });
      const o: Record<string, unknown> = {};
      for (let j = 0; j < sub.names.length; j++) if (seen[j]) o[sub.names[j]!] = vals[j];
      got[k] = o;
      return e;
    });
    const kept: Record<string, unknown> = {};
    for (let k = 0; k < top.names.length; k++) if (has[k]) kept[top.names[k]!] = got[k];
    if (!f.accept(kept, head)) return [undefined, stop];
    f.finish?.(kept);
    return [kept, stop];
  }

  /**
   * buf[start, end) read without JSON.parse building the objects that hold a backslash (ESCAPED_KEYS): one
   * value, or with `elements` the elements of an array written without its brackets. undefined when it is not
   * valid JSON (or nested deeper than this reads). Nested values without a backslash, strings and scalars still
   * go to JSON.parse; keys become own properties, the last of equal keys wins in the first one's place, as with
   * JSON.parse.
   */
  exact(start: number, end: number, elements: boolean): [unknown] | undefined {
    const buf = this.buf;
    let i = start;
    const ws = () => { while (i < end && isWs(buf[i]!)) i++; };
    const bad = (): never => { throw ESCAPED_KEYS; };
    const str = (): string => {
      const s = i;
      if (buf[i] !== QUOTE) bad();
      let k = i + 1;
      let plain = true;
      for (;;) {
        if (k >= end) bad();
        const c = buf[k]!;
        if (c === QUOTE) break;
        if (c === BACKSLASH) { plain = false; k += 2; } else { if (c < 0x20) bad(); k++; }
      }
      i = k + 1;
      return plain ? buf.toString('utf8', s + 1, k) : JSON.parse(buf.toString('utf8', s, i)) as string;
    };
    const value = (depth: number): unknown => {
      if (depth > 1000) bad();
      ws();
      if (i >= end) bad();
      const c = buf[i];
      if (c === QUOTE) return str();
      if (c === LBRACKET || c === LBRACE) {
        // a nested value without a backslash goes to JSON.parse whole
        const e = this.skip(i);
        if (e > end) bad();
        if (!this.hasEscape(i, e)) {
          const v = JSON.parse(buf.toString('utf8', i, e)) as unknown;
          i = e;
          return v;
        }
      }
      if (c === LBRACKET) {
        const out: unknown[] = [];
        i++;
        ws();
        if (buf[i] === RBRACKET && i < end) { i++; return out; }
        for (;;) {
          out.push(value(depth + 1));
          ws();
          if (i >= end) bad();
          if (buf[i] === RBRACKET) { i++; return out; }
          if (buf[i] !== COMMA) bad();
          i++;
        }
      }
      if (c === LBRACE) {
        const out: Record<string, unknown> = {};
        i++;
        ws();
        if (buf[i] === RBRACE && i < end) { i++; return out; }
        for (;;) {
          ws();
          const key = str();
          ws();
          if (i >= end || buf[i] !== COLON) bad();
          i++;
          Object.defineProperty(out, key, { value: value(depth + 1), writable: true, enumerable: true, configurable: true });
          ws();
          if (i >= end) bad();
          if (buf[i] === RBRACE) { i++; return out; }
          if (buf[i] !== COMMA) bad();
          i++;
        }
      }
      const s = i;
      while (i < end) {
        const b = buf[i]!;
        if (isWs(b) || b === COMMA || b === RBRACE || b === RBRACKET || b === COLON || b === LBRACE || b === LBRACKET || b === QUOTE) break;
        i++;
      }
      if (i === s) bad();
      return JSON.parse(buf.toString('latin1', s, i));
    };
    try {
      let v: unknown;
      if (elements) {
        const out: unknown[] = [];
        for (;;) {
          out.push(value(0));
          ws();
          if (i >= end) break;
          if (buf[i] !== COMMA) bad();
          i++;
        }
        v = out;
      } else {
        v = value(0);
        ws();
        if (i < end) bad();
      }
      return [v];
    } catch (e) {
      // not valid JSON (or, from a wrong guess at an element's end, running past the range or the bytes held)
      if (e === ESCAPED_KEYS || e === NEED_MORE || e instanceof SyntaxError || e instanceof InputError || e instanceof RangeError) return undefined;
      throw e;
    }
  }

  /**
   * buf[start, end) as the elements of an array: JSON.parse("[" + text + "]"). undefined when that is not
   * valid JSON. A range starting at an element and ending at the "}" closing some element parses exactly
   * when it holds whole elements separated by commas, so success proves the guessed boundary.
   */
  tryParseElements(start: number, end: number): unknown[] | undefined {
    if (this.hasEscape(start, end)) return this.exact(start, end, true)?.[0] as unknown[] | undefined;
    try {
      return JSON.parse(`[${this.buf.toString('utf8', start, end)}]`) as unknown[];
    } catch {
      return undefined;
    }
  }

  *document(): Refills<unknown> {
    let i = 0;
    if (this.end >= 3 && this.buf[0] === 0xef && this.buf[1] === 0xbb && this.buf[2] === 0xbf) i = 3;
    i = (yield* this.whole(i, (at) => {
      const p = this.ws(at);
      if (p >= this.end) this.fail(this.end, 'empty document');
      return [null, p];
    }))[1];
    let value: unknown;
    const c = this.buf[i];
    if (c === LBRACKET) {
      [value, i] = yield* this.array(i, {});
    } else if (c === LBRACE) {
      [value, i] = yield* this.object(i);
    } else {
      [value, i] = yield* this.whole(i, (at) => { const stop = this.skip(at); return [this.parse(at, stop), stop]; });
    }
    for (;;) {
      i = this.ws(i);
      if (i < this.end) this.fail(i, 'unexpected data after the end of the document');
      if (this.eof) return value;
      i -= yield i;
    }
  }

  /**
   * `read(i)` (which reads something starting at buf[i] and returns it with the index after it) again from the
   * same byte, with more bytes held, each time it reaches the end of those held before the source's end.
   */
  *whole<T>(i: number, read: (i: number) => [T, number]): Refills<[T, number]> {
    for (;;) {
      try {
        return read(i);
      } catch (e) {
        if (e !== NEED_MORE) throw e;
        i -= yield i;
      }
    }
  }

  /** The top-level object: fields one by one, "items" streamed when it is an array. */
  *object(i: number): Refills<[Record<string, unknown>, number]> {
    const out: Record<string, unknown> = {};
    i = (yield* this.whole(i, (at) => {
      const p = this.ws(at + 1);
      if (p >= this.end) this.fail(this.end, 'unexpected end of input in an object (truncated file?)');
      return [null, p];
    }))[1];
    if (this.buf[i] === RBRACE) return [out, i + 1];
    for (;;) {
      // the field's name and ":" (held whole), then its value: "items" streamed, any other held whole
      const [key, at] = yield* this.whole(i, (p) => {
        const buf = this.buf;
        if (buf[p] !== QUOTE) this.fail(p, 'expected a field name in double quotes');
        const keyEnd = this.string(p);
        const k = this.parse(p, keyEnd) as string;
        p = this.ws(keyEnd);
        if (p >= this.end) this.fail(this.end, `unexpected end of input after field name ${fieldName(k)} (truncated file?)`);
        if (buf[p] !== COLON) this.fail(p, `expected ":" after field name ${fieldName(k)}`);
        p = this.ws(p + 1);
        if (p >= this.end) this.fail(this.end, `unexpected end of input: no value for ${fieldName(k)} (truncated file?)`);
        return [k, p];
      });
      i = at;
      let value: unknown;
      if (key === 'items' && this.buf[i] === LBRACKET) {
        [value, i] = yield* this.array(i, out);
      } else {
        [value, i] = yield* this.whole(i, (p) => { const stop = this.skip(p); return [this.parse(p, stop), stop]; });
      }
      Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
      const [c, next] = yield* this.whole(i, (p) => {
        p = this.ws(p);
        if (p >= this.end) this.fail(this.end, 'unexpected end of input in an object (truncated file?)');
        const ch = this.buf[p];
        if (ch !== RBRACE && ch !== COMMA) this.fail(p, `expected "," or "}" after the value of ${fieldName(key)}`);
        return [ch, p + 1];
      });
      if (c === RBRACE) return [out, next];
      i = (yield* this.whole(next, (p) => {
        p = this.ws(p);
        if (p >= this.end) this.fail(this.end, 'unexpected end of input in an object (truncated file?)');
        return [null, p];
      }))[1];
    }
  }
}

/** Runs the reader's refills synchronously (none for bytes held whole). */
function runSync<T>(r: Reader, g: Refills<T>): T {
  let step = g.next();
  while (!step.done) step = g.next(r.refill(step.value));
  return step.value;
}

/** What JSON.parse would return for these bytes (UTF-8, optional BOM), read item by item; see the module comment. */
export function parseJsonBytes(buf: Uint8Array, opts: JsonBytesOptions = {}): unknown {
  const r = new Reader(buf, opts);
  return runSync(r, r.document());
}

/**
 * The same as parseJsonBytes for bytes read from `src` a window at a time (WINDOW_BYTES, more for one larger
 * element): only the window and what the callbacks keep are held, never the whole document.
 */
export function parseJsonStream(src: ByteSource, opts: JsonBytesOptions = {}, windowBytes = WINDOW_BYTES): unknown {
  const r = new Reader(Buffer.allocUnsafe(Math.max(4, windowBytes)), opts, src);
  return runSync(r, r.document());
}

/**
 * parseJsonStream reading ahead: while a window is parsed, the next bytes are read into a second buffer of the
 * same size (off the main thread: the reads are not on the parse's path), so twice the window is held. Same
 * values and errors. A read in flight is waited for before this returns or throws.
 */
export async function parseJsonStreamAhead(src: AsyncByteSource, opts: JsonBytesOptions = {}, windowBytes = WINDOW_BYTES): Promise<unknown> {
  const size = Math.max(4, windowBytes);
  const r = new Reader(Buffer.allocUnsafe(size), opts, { async: src, spare: Buffer.allocUnsafe(size) });
  try {
    await r.start();
    const g = r.document();
    let step = g.next();
    while (!step.done) step = g.next(await r.refillAhead(step.value));
    return step.value;
  } finally {
    await r.settle();
  }
}
