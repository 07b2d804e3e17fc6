"""Request validation problems in the client's language: pydantic writes English; the
Chinese text of each problem comes from its error type and context."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from youyou.workbench.errors import Localized

# pydantic error type → the Chinese problem; ``{name}`` are fields of the error's ``ctx``.
_ZH: dict[str, str] = {
    "missing": "必填",
    "extra_forbidden": "不允许此字段",
    "string_too_short": "至少需要 {min_length} 个字符",
    "string_too_long": "最多 {max_length} 个字符",
    "string_type": "应为字符串",
    "string_pattern_mismatch": "格式不符合要求",
    "int_type": "应为整数",
    "int_parsing": "应为整数",
    "int_from_float": "应为整数",
    "float_type": "应为数字",
    "float_parsing": "应为数字",
    "bool_type": "应为布尔值",
    "bool_parsing": "应为布尔值",
    "greater_than": "应大于 {gt}",
    "greater_than_equal": "应不小于 {ge}",
    "less_than": "应小于 {lt}",
    "less_than_equal": "应不大于 {le}",
    "literal_error": "应为 {expected} 之一",
    "enum": "应为 {expected} 之一",
    "too_short": "至少需要 {min_length} 项",
    "too_long": "最多 {max_length} 项",
    "list_type": "应为列表",
    "dict_type": "应为对象",
    "model_type": "应为对象",
    "model_attributes_type": "应为对象",
    "json_invalid": "不是有效的 JSON",
    "json_type": "不是有效的 JSON",
    "datetime_type": "应为日期时间（ISO 8601）",
    "datetime_parsing": "应为日期时间（ISO 8601）",
    "datetime_from_date_parsing": "应为日期时间（ISO 8601）",
    "union_tag_invalid": "type 应为 {expected_tags} 之一",
    "union_tag_not_found": "缺少 type 字段",
}


def _chinese(error: Mapping[str, Any]) -> str:
    template = _ZH.get(str(error.get("type")))
    if template is None:
        return f"无效（{error['msg']}）"
    try:
        return template.format(**(error.get("ctx") or {}))
    except (KeyError, IndexError):
        return f"无效（{error['msg']}）"


def field_problems(errors: Iterable[Mapping[str, Any]]) -> Localized:
    """``field: problem; …`` in English and Chinese; the field is named by its path in the
    request (``title``, ``query.since``, ``content.0.text``)."""
    english, chinese = [], []
    for error in errors:
        where = ".".join(str(part) for part in error["loc"] if part != "body")
        english.append(f"{where}: {error['msg']}" if where else str(error["msg"]))
        chinese.append(f"{where}：{_chinese(error)}" if where else _chinese(error))
    return Localized("; ".join(english), "；".join(chinese))
