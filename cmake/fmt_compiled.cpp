// fmt's compiled part, for builds that have fmt's headers but no libfmt for their target: the aarch64 cross
// build (cmake/kernels_only.cmake), where Debian's libfmt is the host's. The definitions are fmt's own
// (fmt/format-inl.h, shipped with its headers), compiled once here; FMT_HEADER_ONLY would compile them into
// every file that formats (format.cpp: 10 s -> 24 s for aarch64 at -O2 on the shared 2-core machine).
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
// The templates fmt/format.h declares `extern template` outside header-only mode: instantiated here.
template FMT_API auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl<wchar_t>(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
}  // namespace detail
FMT_END_NAMESPACE
