"""Short, readable forms of long C++ kernel names.

Kineto records the full demangled signature of every kernel (namespaces,
template arguments, lambdas, parameter lists); :func:`shorten_kernel_name`
keeps what says what the kernel computes. Tables, comparisons and the
timeline's bar labels all use it.
"""

from __future__ import annotations

import re

__all__ = ["cut", "shorten_kernel_name", "split_args"]

_BASIC = {
    "float", "double", "int", "long", "unsigned", "char", "bool", "short", "signed", "const",
    "half", "Half", "BFloat16", "bfloat16_t", "__half", "__nv_bfloat16", "half_t", "tfloat32_t",
    "size_t", "int64_t", "int32_t", "uint32_t", "uint64_t", "uint8_t", "int8_t", "complex",
    "true", "false", "void",
}  # fmt: skip
_FLOATS = ("BFloat16", "bfloat16_t", "__nv_bfloat16", "Half", "half", "__half", "half_t",
           "tfloat32_t", "float", "double")  # fmt: skip
_WRAPPERS = {
    "gpu_kernel_impl", "gpu_kernel_impl_nocast", "func_wrapper_t", "ReduceOp", "Array", "array",
    "TensorListMetadata", "OffsetCalculator", "TrivialOffsetCalculator", "LoadWithCast",
    "StoreWithCast", "TensorInfo", "operator", "lambda", "Params",
}  # fmt: skip
_GENERIC = {"Kernel", "Kernel2", "kernel", "device_kernel", "Kernel_", "GenericKernel"}
_CUBLAS_TAIL = re.compile(r"_execute_(?:(\w*?)_)?kernel__\d+x_cublas$")


def split_args(text: str) -> tuple[str, list[str]]:
    """``"f<a, b<c>>"`` -> ``("f", ["a", "b<c>"])`` (top level only)."""
    lt = text.find("<")
    if lt < 0:
        return text.strip(), []
    args, depth, cur = [], 0, ""
    for ch in text[lt + 1 :]:
        if ch == "<":
            depth += 1
        elif ch == ">":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        cur += ch
    args.append(cur.strip())
    return text[:lt].strip(), [a for a in args if a]


def _scan(arg: str, found: list[tuple[str, str]], dtypes: list[str]) -> None:
    """Collect informative identifiers (functors, traits) and dtypes in ``arg``."""
    base, args = split_args(arg)
    words = base.replace("*", " ").replace("&", " ").split()
    if words and all(w in _BASIC for w in words):
        dtypes.extend(w for w in words if w in _FLOATS or w in ("bool", "int", "long"))
    elif base and not base[0].isdigit() and base not in _WRAPPERS | {f for f, _ in found}:
        found.append((base, arg))
    for a in args:
        _scan(a, found, dtypes)


def _with_dtype(ident: tuple[str, str]) -> str:
    dtypes: list[str] = []
    for a in split_args(ident[1])[1]:
        _scan(a, [], dtypes)
    return f"{ident[0]}<{dtypes[0]}>" if dtypes else ident[0]


def shorten_kernel_name(name: str, width: int = 60) -> str:
    """A readable short form of a (C++ template) kernel name, at most ``width`` chars.

    Drops ``void``, namespaces, function parameters and lambdas, then keeps the
    kernel's base name plus the functors that say what it computes, with the
    element type on the last one::

        void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,
        std::array<char*, 3ul> >(int, ...)  ->  vectorized_elementwise_kernel<CUDAFunctor_add<float>>

    Wrapper kernels show what they wrap (``cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>``
    -> ``cutlass_80_simt_sgemm_64x64_8x5_tn_align1``). cuBLAS/CUTLASS names keep
    their tile information, lose the ``_execute..._cublas`` tail, and keep a
    ``split_k`` marker. Longer results are cut with ``…`` (the marker goes
    only when ``width`` cannot hold it).
    """
    s = name.strip()
    if s.startswith(("Memcpy", "Memset")):
        return cut(s, width)
    s = s.removeprefix("void ").replace("(anonymous namespace)::", "")
    prev = None
    while prev != s:  # lambdas and call operators hang off the function that made them
        prev = s
        s = re.sub(r"::\{lambda\([^()]*\)#\d+\}", "", s)
        s = re.sub(r"::operator\(\)", "", s).replace(") const", ")")
    prev = None
    while prev != s:  # then parameter lists, innermost first
        prev = s
        s = re.sub(r"\([^()]*\)", "", s)
    s = re.sub(r"\{[^{}]*\}", "", s)
    s = re.sub(r"\b\w+::", "", s)  # namespaces and class scopes
    s = re.sub(r"::|\bconst\b", "", s).strip()
    marker = ""
    m = _CUBLAS_TAIL.search(s)
    if m:
        marker = f"_{m.group(1)}" if m.group(1) else ""
        s = s[: m.start()]
    base, args = split_args(s)
    found: list[tuple[str, str]] = []
    dtypes: list[str] = []
    for a in args:
        _scan(a, found, dtypes)
    if base in _GENERIC and found:
        short = found[0][0]
    elif found:  # the innermost functor says most; add the wrapper when it fits
        last = found[min(len(found), 2) - 1]
        options = [f"{base}<{_with_dtype(last)}>", f"{base}<{last[0]}>"]
        if len(found) > 1:
            options.insert(0, f"{base}<{found[0][0]}, {_with_dtype(last)}>")
        short = next((o for o in options if len(o) + len(marker) <= width), options[-1])
    elif dtypes:
        floats = [d for d in dtypes if d in _FLOATS]
        short = f"{base}<{(floats or dtypes)[0]}>"
    else:
        short = base or name.strip()
    marked = cut(short, width - len(marker)) + marker
    return marked if len(marked) <= width else cut(short, width)


def cut(text: str, width: int) -> str:
    """``text``, or its first ``width - 1`` characters and ``…`` when longer."""
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"
