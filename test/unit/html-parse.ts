/**
 * A strict parser for the HTML kube-renumber writes (test helper): every non-void element closed in order,
 * attribute values double-quoted with no raw `<` or `>`, no raw `<` in text, only known character references.
 * Throws with the offset on anything else, so "it parses" means the document is well-formed.
 */
export interface El {
  tag: string;
  attrs: Record<string, string>;
  children: Array<El | string>;
  /** Raw text of <script> and <style>. */
  raw?: string;
}

const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track', 'wbr']);
const RAW = new Set(['script', 'style']);
const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

export function decode(s: string, at = 0): string {
  return s.replace(/&([^;\s&]*);?/g, (m, ref: string) => {
    if (!m.endsWith(';')) throw new Error(`bare & at ${at}: ${JSON.stringify(s.slice(0, 40))}`);
    if (/^#\d+$/.test(ref)) return String.fromCodePoint(Number(ref.slice(1)));
    if (/^#x[0-9a-f]+$/i.test(ref)) return String.fromCodePoint(parseInt(ref.slice(2), 16));
    if (ref in NAMED) return NAMED[ref]!;
    throw new Error(`unknown character reference &${ref}; at ${at}`);
  });
}

export function parseHtml(html: string): El {
  const root: El = { tag: '#document', attrs: {}, children: [] };
  const stack: El[] = [root];
  let i = 0;
  const top = () => stack[stack.length - 1]!;
  const fail = (why: string): never => { throw new Error(`${why} at offset ${i}: ${JSON.stringify(html.slice(Math.max(0, i - 40), i + 40))}`); };
  while (i < html.length) {
    if (html.startsWith('<!--', i)) {
      const e = html.indexOf('-->', i);
      if (e < 0) fail('unclosed comment');
      i = e + 3;
    } else if (html.startsWith('<!', i)) {
      if (!/^<!DOCTYPE html>/i.test(html.slice(i, i + 15)) || i !== 0) fail('unexpected declaration');
      i = html.indexOf('>', i) + 1;
    } else if (html.startsWith('</', i)) {
      const m = /^<\/([a-zA-Z][a-zA-Z0-9-]*)\s*>/.exec(html.slice(i));
      if (!m) fail('malformed end tag');
      const tag = m![1]!.toLowerCase();
      if (top().tag !== tag) fail(`</${tag}> closes <${top().tag}>`);
      stack.pop();
      i += m![0].length;
    } else if (html[i] === '<') {
      const m = /^<([a-zA-Z][a-zA-Z0-9-]*)/.exec(html.slice(i));
      if (!m) fail('raw < in text');
      const tag = m![1]!.toLowerCase();
      i += m![0].length;
      const attrs: Record<string, string> = {};
      let selfClose = false;
      for (;;) {
        const ws = /^\s*/.exec(html.slice(i))![0];
        i += ws.length;
        if (html.startsWith('/>', i)) { selfClose = true; i += 2; break; }
        if (html[i] === '>') { i++; break; }
        if (ws.length === 0) fail('attributes must be separated by white space');
        const a = /^([a-zA-Z_:][-a-zA-Z0-9_:.]*)(="([^"]*)")?/.exec(html.slice(i));
        if (!a) fail('malformed attribute');
        const name = a![1]!.toLowerCase();
        if (name in attrs) fail(`duplicate attribute ${name}`);
        const value = a![3] ?? '';
        if (/[<>]/.test(value)) fail(`raw < or > in attribute ${name}`);
        attrs[name] = decode(value, i);
        i += a![0].length;
      }
      const el: El = { tag, attrs, children: [] };
      top().children.push(el);
      if (selfClose && !VOID.has(tag) && !stack.some((s) => s.tag === 'svg') && tag !== 'svg') fail(`<${tag}/> outside SVG`);
      if (RAW.has(tag)) {
        const e = html.indexOf(`</${tag}>`, i);
        if (e < 0) fail(`unclosed <${tag}>`);
        el.raw = html.slice(i, e);
        i = e + tag.length + 3;
      } else if (!VOID.has(tag) && !selfClose) {
        stack.push(el);
      }
    } else {
      const e = html.indexOf('<', i);
      const text = html.slice(i, e < 0 ? html.length : e);
      if (text.includes('>')) fail('raw > in text');
      top().children.push(decode(text, i));
      i = e < 0 ? html.length : e;
    }
  }
  if (stack.length !== 1) throw new Error(`unclosed <${top().tag}> at the end`);
  return root;
}

export function all(el: El, pred: (e: El) => boolean, out: El[] = []): El[] {
  for (const c of el.children) {
    if (typeof c === 'string') continue;
    if (pred(c)) out.push(c);
    all(c, pred, out);
  }
  return out;
}

export function text(el: El): string {
  return el.children.map((c) => (typeof c === 'string' ? c : text(c))).join('');
}
