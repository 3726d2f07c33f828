#include "png.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#ifdef XDC_HAVE_ZLIB
#include <zlib.h>
#endif

namespace xdc::testing {

namespace {
uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
}  // namespace

Png read_png(const std::string& path) {
  Png png;
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> f((std::istreambuf_iterator<char>(in)), {});
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (f.size() < 33 || std::memcmp(f.data(), sig, 8) != 0) {
    png.error = "not a PNG";
    return png;
  }
  std::vector<uint8_t> idat;
  int depth = 0, colour = 0, interlace = 0;
  for (size_t p = 8; p + 12 <= f.size();) {
    const uint32_t len = be32(&f[p]);
    const std::string type(reinterpret_cast<const char*>(&f[p + 4]), 4);
    if (p + 12 + len > f.size()) break;
    const uint8_t* data = &f[p + 8];
    if (type == "IHDR") {
      png.width = static_cast<int>(be32(data));
      png.height = static_cast<int>(be32(data + 4));
      depth = data[8];
      colour = data[9];
      interlace = data[12];
    } else if (type == "IDAT") {
      idat.insert(idat.end(), data, data + len);
    }
    p += 12 + len;
  }
#ifdef XDC_HAVE_ZLIB
  const int channels = colour == 6 ? 4 : colour == 2 ? 3 : 0;
  if (depth != 8 || channels == 0 || interlace != 0) {
    png.error = "only 8-bit RGB/RGBA without interlace is decoded";
    return png;
  }
  const size_t stride = static_cast<size_t>(png.width) * channels;
  std::vector<uint8_t> raw((stride + 1) * png.height);
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, idat.data(), idat.size()) != Z_OK || raw_len != raw.size()) {
    png.error = "IDAT does not inflate to the image size";
    return png;
  }
  png.pixels.assign(stride * png.height, 0);
  for (int y = 0; y < png.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* src = &raw[y * (stride + 1) + 1];
    uint8_t* row = &png.pixels[y * stride];
    const uint8_t* up = y > 0 ? &png.pixels[(y - 1) * stride] : nullptr;
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= static_cast<size_t>(channels) ? row[i - channels] : 0;
      const int b = up ? up[i] : 0;
      const int c = up && i >= static_cast<size_t>(channels) ? up[i - channels] : 0;
      int v = src[i];
      switch (filter) {
        case 1:
          v += a;
          break;
        case 2:
          v += b;
          break;
        case 3:
          v += (a + b) / 2;
          break;
        case 4: {
          const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
          v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default:
          break;
      }
      row[i] = static_cast<uint8_t>(v);
    }
  }
  png.channels = channels;
#else
  (void)depth;
  (void)colour;
  (void)interlace;
  png.error = "built without zlib";
#endif
  return png;
}

}  // namespace xdc::testing
