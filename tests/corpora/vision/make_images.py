#!/usr/bin/env python3
"""Write the test images of the `vision` reward corpus (tests/corpora/vision.jsonl)
into this directory. Run it from anywhere; the outputs are committed, so it is
needed only to change them. Standard library only (zlib, struct).

blocks.*: a 24x16 picture on white, the same pixels in every format:
  red      (1,1)-(4,4) and (5,5)-(8,8): corners touch (2 regions with 4-connectivity, 1 with 8)
  red      (12,1)-(14,3)
  blue     (16,2)-(22,6)
  green    (2,11)-(6,14)
  yellow   (14,10)-(18,14) and a single pixel at (20,12)
  (250,10,10), almost red, at (10,12)-(11,13)
(x0,y0)-(x1,y1) inclusive. gray.*: 8x8, left half black, right half (128,128,128).
The rest are broken on purpose.
shapes-seed7.png is not written here: it is `tern data shapes --seed 7 --n 1 --size 48`'s
images/shape-00001.png (libtern's own PNG encoder).
"""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
W, H = 24, 16


def blocks():
    px = [[(255, 255, 255)] * W for _ in range(H)]

    def fill(x0, y0, x1, y1, c):
        for y in range(y0, y1 + 1):
            for x in range(x0, x1 + 1):
                px[y][x] = c
    fill(1, 1, 4, 4, (255, 0, 0))
    fill(5, 5, 8, 8, (255, 0, 0))
    fill(12, 1, 14, 3, (255, 0, 0))
    fill(16, 2, 22, 6, (0, 0, 255))
    fill(2, 11, 6, 14, (0, 128, 0))
    fill(14, 10, 18, 14, (255, 255, 0))
    fill(20, 12, 20, 12, (255, 255, 0))
    fill(10, 12, 11, 13, (250, 10, 10))
    return px


def gray():
    return [[0] * 4 + [128] * 4 for _ in range(8)]


def chunk(t, body):
    return struct.pack('>I', len(body)) + t + body + struct.pack('>I', zlib.crc32(t + body) & 0xffffffff)


def png(w, h, rows, color_type, depth=8, extra=b'', interlace=0):
    """rows: a function (x, y) -> bytes of one pixel, already in the file's format."""
    ihdr = struct.pack('>IIBBBBB', w, h, depth, color_type, 0, 0, interlace)
    raw = b''
    if not interlace:
        for y in range(h):
            raw += b'\x00' + b''.join(rows(x, y) for x in range(w))
    else:  # Adam7
        passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
                  (1, 0, 2, 2), (0, 1, 1, 2)]
        for x0, y0, dx, dy in passes:
            xs = range(x0, w, dx)
            if not len(xs):
                continue
            for y in range(y0, h, dy):
                raw += b'\x00' + b''.join(rows(x, y) for x in xs)
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) + extra +
            chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b''))


def write(name, data):
    with open(os.path.join(HERE, name), 'wb') as f:
        f.write(data)


def main():
    px = blocks()
    g = gray()
    rgb = lambda x, y: bytes(px[y][x])
    blocks_png = png(W, H, rgb, 2)
    write('blocks.png', blocks_png)
    write('blocks-interlaced.png', png(W, H, rgb, 2, interlace=1))
    # RGBA: white becomes transparent black, which is composited over white
    write('blocks-alpha.png', png(W, H, lambda x, y: bytes(px[y][x]) + b'\xff'
                                  if px[y][x] != (255, 255, 255) else b'\0\0\0\0', 6))
    colors = sorted({c for row in px for c in row})
    plte = chunk(b'PLTE', b''.join(bytes(c) for c in colors))
    write('blocks-palette.png', png(W, H, lambda x, y: bytes([colors.index(px[y][x])]), 3,
                                    extra=plte))
    write('blocks-16.png', png(W, H, lambda x, y: b''.join(struct.pack('>H', v * 257)
                                                            for v in px[y][x]), 2, depth=16))
    # netpbm
    body = b''.join(bytes(px[y][x]) for y in range(H) for x in range(W))
    write('blocks.ppm', b'P6\n# the blocks picture\n%d %d\n255\n' % (W, H) + body)
    plain = 'P3\n# plain\n%d %d\n255\n' % (W, H)
    for y in range(H):
        plain += ' '.join('%d %d %d' % px[y][x] for x in range(W)) + '\n'
    write('blocks-plain.ppm', plain.encode())
    write('blocks-16.ppm', b'P6 %d %d 65535\n' % (W, H) +
          b''.join(struct.pack('>H', v * 257) for y in range(H) for x in range(W) for v in px[y][x]))
    write('gray.pgm', b'P5 8 8 255\n' + bytes(v for row in g for v in row))
    write('gray.png', png(8, 8, lambda x, y: bytes([g[y][x]]), 0))
    write('gray-plain.pgm', ('P2 8 8 255\n' + '\n'.join(' '.join(map(str, r)) for r in g) +
                             '\n').encode())
    # broken on purpose
    write('truncated.png', blocks_png[:len(blocks_png) // 2])
    bad = bytearray(blocks_png)
    bad[-20] ^= 0xff  # inside the IDAT's CRC or data
    write('badcrc.png', bytes(bad))
    write('signature-only.png', blocks_png[:8])
    write('notanimage.png', b'this is a text file, not a picture\n')
    write('empty.png', b'')
    write('zero.ppm', b'P6 0 0 255\n')
    write('huge.ppm', b'P6 100000 100000 255\n' + body)
    ihdr = struct.pack('>IIBBBBB', 100000, 100000, 8, 2, 0, 0, 0)
    write('huge.png', b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) +
          chunk(b'IDAT', zlib.compress(b'\0' * 64)) + chunk(b'IEND', b''))
    write('truncated.ppm', b'P6 24 16 255\n' + body[:len(body) // 2])
    write('badsample.ppm', b'P3 2 1 255\n0 0 0 300 0 0\n')
    write('badheader.ppm', b'P6 24 x16 255\n' + body)


if __name__ == '__main__':
    main()
