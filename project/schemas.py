"""API schemas shared by every router: the one error shape, the claim-level verdict
shapes both apps return (docs/validator.md), the claim labels both apps accept (with a
decision and after it) and the text rules the OpenAPI document states for every string a
client sends.

The patterns use only syntax JSON Schema (ECMA), pydantic (Rust) and Python agree on.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.http import HttpRequest
from ninja import Schema
from ninja.errors import ValidationError
from pydantic import ConfigDict, Field, Strict, field_validator
from pydantic import ValidationError as PydanticValidationError

# PostgreSQL text cannot hold NUL; project.api.guard_request refuses it with a 422.
NO_NUL = r"^[^\x00]*$"
# What Python's str.strip() removes, spelled out (\s differs between regex engines).
WHITESPACE = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# At least one character that is neither NUL nor whitespace, and no NUL anywhere.
# A free-form object's keys: a NUL character anywhere in a JSON body is refused with 422
# (PostgreSQL cannot store it), so the schema says so for the keys too.
NO_NUL_KEYS: dict[str, Any] = {"propertyNames": {"pattern": NO_NUL}}
NOT_BLANK = rf"^[^\x00]*[^\x00{WHITESPACE}][^\x00]*$"

# Stated in the schema, enforced before parsing by project.api.guard_request (whose
# message names the field); not checked twice.
# A model name as project.llm.registry.resolve_model reads it: "provider:name"; blank
# means "the default". Whether this deployment can use it (a known provider, its API key
# set) is beyond a schema: such a name is refused with a 422 naming the field.
_PROVIDER_AND_NAME = rf"[A-Za-z][A-Za-z0-9_.-]*:[^\x00]*[^\x00{WHITESPACE}][^\x00]*"
MODEL_NAME = rf"^[{WHITESPACE}]*(?:{_PROVIDER_AND_NAME})?$"
# The same, where a model must be named (no default to fall back on).
REQUIRED_MODEL_NAME = rf"^[{WHITESPACE}]*{_PROVIDER_AND_NAME}$"
# A task's second validator model: a model name as above, or "none" (no second judge).
SECOND_MODEL_NAME = rf"^[{WHITESPACE}]*(?:[Nn][Oo][Nn][Ee][{WHITESPACE}]*|{_PROVIDER_AND_NAME})?$"

Text = Annotated[str, Field(json_schema_extra={"pattern": NO_NUL})]


def json_integer(value: Any) -> Any:
    """A ``mode="before"`` field validator for integer fields: JSON Schema's "integer"
    admits 3 and 3.0, never false or "3" (pydantic's lax mode would take both, its
    strict mode would refuse 3.0)."""
    if isinstance(value, bool | str):
        raise ValueError("must be a JSON integer")
    return value


JsonBool = Annotated[bool, Strict()]


def not_blank(value: str) -> str:
    """The check the ``NOT_BLANK`` pattern states, with a readable message."""
    if not value.strip():
        raise ValueError("must not be blank")
    return value


class FieldErrorOut(Schema):
    field: str = Field(description="Dotted path of the offending field, e.g. 'plan.nodes.0.role'")
    message: str


class ErrorOut(Schema):
    """The one error shape of the API."""

    detail: str
    code: str
    errors: list[FieldErrorOut] | None = Field(
        None, description="On 422 only: one entry per invalid field"
    )


def as_list(value: Any) -> list[Any]:
    """A stored JSON field that should be a list: [] for None, a lone value wrapped."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def error_responses(*codes: int) -> dict[int, type[ErrorOut]]:
    """The error statuses an endpoint documents; 400/401/413/422 apply to all."""
    return {code: ErrorOut for code in sorted({400, 401, 413, 422, *codes})}


class CitationOut(Schema):
    """A citation as checked by the application: ``verified`` means the quote
    occurs in the named tool result; ``content[start:end]`` of that evidence is the quote."""

    ref: str
    quote: str
    # "contradicts": the quote states something else (a claim with verified citations of
    # both stances is disputed). Verdicts made before stances existed read "supports".
    stance: Literal["supports", "contradicts"] = "supports"
    verified: bool
    evidence_id: int | None
    start: int | None
    end: int | None
    problem: str


class ClaimVerdictOut(Schema):
    id: str
    text: str
    verdict: Literal["supported", "contradicted", "unsupported"]
    citations: list[CitationOut]
    note: str


class RequirementOut(Schema):
    text: str
    met: Literal["yes", "partly", "no"]
    claim_ids: list[str]


class FirstProblemOut(Schema):
    id: str
    text: str
    verdict: str


class ClaimSummaryOut(Schema):
    """Claim verdict counts of one validation (zero for verdicts made before claims)."""

    supported: int = 0
    contradicted: int = 0
    unsupported: int = 0
    # Supported claims that another verified source contradicts (counted in supported too).
    disputed: int = 0
    total: int = 0
    unverified_citations: int = 0
    first_problem: FirstProblemOut | None = None


# --- Claim labels: a person's verdict on each claim, given with a decision (the tasks API's
# feedback) or after it (evidence_app's claim-labels) -----------------------------------------

# Ids are database keys (64-bit); anything larger can name no row.
MAX_ID = 2**63 - 1


class CorrectedCitationIn(Schema):
    model_config = ConfigDict(extra="forbid")

    evidence_id: int = Field(
        ge=1, le=MAX_ID, description="A tool result of this task (GET /runs/{id}/evidence)"
    )
    quote: str = Field(
        min_length=1,
        max_length=2000,
        description="The words it says",
        json_schema_extra={"pattern": NOT_BLANK},
    )

    _json_integers = field_validator("evidence_id", mode="before")(json_integer)
    _not_blank = field_validator("quote")(not_blank)


class ClaimLabelIn(Schema):
    model_config = ConfigDict(extra="forbid")

    claim_index: int = Field(
        ge=0, le=100_000, description="The claim's 0-based position in the validation"
    )
    label: Literal["supported", "unsupported", "contradicted"]
    corrected_citation: CorrectedCitationIn | None = None

    _json_integers = field_validator("claim_index", mode="before")(json_integer)


def query_parameters(model: type[Schema]) -> dict[str, Any]:
    """``openapi_extra`` documenting ``model``'s fields as the query parameters of an
    operation that reads them itself with ``query_of`` (as ``Query[model]`` would)."""
    document = model.model_json_schema()
    parameters = []
    for name, schema in document.get("properties", {}).items():
        schema = dict(schema)
        if schema.get("default", 0) is None:
            schema.pop("default")
        parameters.append(
            {
                "in": "query",
                "name": name,
                "required": name in document.get("required", []),
                "description": schema.get("description", ""),
                "schema": schema,
            }
        )
    return {"parameters": parameters}


def query_of[S: Schema](model: type[S], request: HttpRequest) -> S:
    """The query parameters of ``request`` as ``model``, read after the operation's own
    checks (a role's 403 comes before a bad parameter's 422); a bad one raises the same
    422 ``Query[model]`` does."""
    try:
        return model.model_validate(request.GET.dict())
    except PydanticValidationError as exc:
        raise ValidationError(
            [
                {"loc": ("query", *error["loc"]), "msg": error["msg"], "type": error["type"]}
                for error in exc.errors(include_url=False)
            ]
        ) from None
