// A PNG decoder for the screenshots the HTML test takes (8-bit RGB or RGBA, not interlaced: what Chromium
// writes), so the test can say an image is the right size and not blank.

import { inflateSync } from 'node:zlib';

export interface Image { width: number; height: number; /** RGBA, row by row */ rgba: Buffer }

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function decodePng(png: Buffer): Image {
  if (!png.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG');
  let at = 8;
  let width = 0, height = 0, depth = 0, color = -1, interlace = 0;
  const idat: Buffer[] = [];
  while (at < png.length) {
    const len = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0); height = data.readUInt32BE(4); depth = data[8]!; color = data[9]!; interlace = data[12]!;
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    at += 12 + len;
  }
  if (depth !== 8 || (color !== 2 && color !== 6) || interlace !== 0) throw new Error(`unsupported PNG: depth ${depth}, colour type ${color}, interlace ${interlace}`);
  const bpp = color === 6 ? 4 : 3;
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * bpp;
  if (raw.length !== height * (stride + 1)) throw new Error(`PNG data is ${raw.length} bytes, expected ${height * (stride + 1)}`);
  const out = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = out.subarray(y * stride, (y + 1) * stride);
    const prev = y > 0 ? out.subarray((y - 1) * stride, y * stride) : Buffer.alloc(stride);
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? row[x - bpp]! : 0;
      const b = prev[x]!;
      const c = x >= bpp ? prev[x - bpp]! : 0;
      let v = src[x]!;
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else if (filter !== 0) throw new Error(`bad PNG filter ${filter} in row ${y}`);
      row[x] = v & 0xff;
    }
  }
  if (bpp === 4) return { width, height, rgba: out };
  const rgba = Buffer.alloc(width * height * 4);
  for (let p = 0; p < width * height; p++) {
    rgba[p * 4] = out[p * 3]!; rgba[p * 4 + 1] = out[p * 3 + 1]!; rgba[p * 4 + 2] = out[p * 3 + 2]!; rgba[p * 4 + 3] = 255;
  }
  return { width, height, rgba };
}

/** Distinct colours, and the share of pixels that differ from the most common colour (the background). */
export function imageStats(img: Image): { colours: number; foreground: number } {
  const counts = new Map<number, number>();
  for (let p = 0; p < img.width * img.height; p++) {
    const k = img.rgba.readUInt32BE(p * 4);
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const bg = Math.max(...counts.values());
  return { colours: counts.size, foreground: 1 - bg / (img.width * img.height) };
}
