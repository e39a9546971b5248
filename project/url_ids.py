"""The ``id`` path converter of the pages: a row id, digits that a bigint column can hold.
Django's ``int`` matches any run of digits, and a longer one reached the database as an
integer too large to compare (OverflowError on SQLite, a DataError on PostgreSQL): a
500. With ``id`` such an address matches no page: a 404, like any id that names no row."""

from __future__ import annotations

# The largest value of a bigint primary key.
MAX_ROW_ID = 2**63 - 1


class RowIdConverter:
    regex = "[0-9]+"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > MAX_ROW_ID:
            # A converter's ValueError means "this pattern does not match".
            raise ValueError(f"{value} is not a row id")
        return number

    def to_url(self, value: int) -> str:
        return str(value)
