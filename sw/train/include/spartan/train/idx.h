// IDX file reader (the MNIST / Fashion-MNIST container) and the dataset loader built on it.
//
// IDX format (LeCun et al., http://yann.lecun.com/exdb/mnist/, "FILE FORMATS FOR THE MNIST DATABASE"):
//   bytes 0-1: zero; byte 2: element type (0x08 = unsigned byte, the only type accepted here);
//   byte 3: number of dimensions d; then d big-endian u32 sizes; then the elements, row-major.
// Files may be gzip-compressed (detected by the 1f 8b magic) or raw; decompression uses zlib.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace spartan::train {

/// A decoded IDX u8 array: `dims` (outermost first) and row-major `data` (product(dims) bytes).
struct IdxArray {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> data;
};

/// Reads an IDX file (gzip or raw). Throws spartan::IoError if the file cannot be opened and
/// spartan::FormatError (file, field, byte offset in the decompressed stream) on a bad magic,
/// an element type other than u8, a corrupt gzip stream, more than 2^34 elements (product of the dimensions,
/// overflow-checked), or a file shorter than its header says.
IdxArray read_idx(const std::string& path);

/// One split of an image-classification dataset: `images` are N x 1 x rows x cols floats scaled
/// to [0, 1] (pixel / 255; no mean subtraction, so background zeros stay zeros), `labels` in [0, classes).
struct DataSplit {
  int n = 0, rows = 0, cols = 0;
  std::vector<float> images;
  std::vector<std::uint8_t> labels;
};

struct Dataset {
  std::string name;  ///< e.g. "fashion-mnist" (the directory name)
  std::string dir;
  DataSplit train, test;
  int classes = 10;
};

/// Largest image side (rows, cols) load_idx_dataset accepts.
inline constexpr std::uint32_t kMaxImageSide = 4096;

/// Default location of the Debian package `dataset-fashion-mnist`.
inline constexpr const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Loads an IDX pair per split from `dir`: {train,t10k}-{images-idx3,labels-idx1}-ubyte, each either
/// raw or with a `.gz` suffix. Throws IoError when a file is missing, FormatError when malformed, and
/// InputError when image and label counts differ or a split holds 0 images. Image rows and cols must be in [1, kMaxImageSide] (FormatError). Every label must be < `classes` (10 for Fashion-MNIST and
/// MNIST; 1..256): an out-of-range label throws FormatError naming the labels file, the label's index and value
/// (byte offset in the decompressed file). The returned `classes` is the given one.
Dataset load_idx_dataset(const std::string& dir, int classes = 10);

/// Every path load_idx_dataset(dir) may read: the four IDX files, each raw and with `.gz` (for checks that an
/// output does not overwrite an input; nothing is opened).
std::vector<std::string> idx_dataset_files(const std::string& dir);

}  // namespace spartan::train
