"""Stand-in for `qwix`, on the GPU machine only, for the tokamax anchor in row_variants.py.

tokamax imports qwix at module level for its quantized-array type; the real package pulls in
flax and its dependency tree, which the offline GPU image lacks. tokamax's normalization kernels
never touch a quantized array, so this module gives the names it reads and fails loudly if
anything calls into it.
"""


class QArray:
    """Never instantiated: present so `isinstance(x, qwix.QArray)` is False for every array."""


def quantize(*args: object, **kwargs: object) -> None:
    raise NotImplementedError("qwix stand-in: quantization is not available in this benchmark")


dequantize = quantize
