"""Drop-in module for FlashAttention-3's `flash_attn_interface`:

    import flashc.flash_attn_interface as flash_attn_interface
    from flashc.flash_attn_interface import flash_attn_func, flash_attn_with_kvcache
"""
from .interface import (flash_attn_combine, flash_attn_func, flash_attn_qkvpacked_func,  # noqa: F401
                        flash_attn_varlen_func, flash_attn_with_kvcache, get_scheduler_metadata)

__all__ = ["flash_attn_func", "flash_attn_varlen_func", "flash_attn_qkvpacked_func", "flash_attn_with_kvcache",
           "flash_attn_combine", "get_scheduler_metadata"]
