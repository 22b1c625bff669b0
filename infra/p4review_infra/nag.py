"""cdk-nag (3.x) acknowledgments.

cdk-nag 3 dropped `NagSuppressions`; rules are acknowledged with CDK's native
`Validations.of(scope).acknowledge(...)`, which applies to the scope and all its children.
A rule that reports several findings on one resource (IAM5) needs one acknowledgment per
finding, written `AwsSolutions-IAM5[<finding>]`. Every acknowledgment carries its reason;
docs/infra.md lists them all.
"""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule: str, reason: str, findings: Iterable[str] = ()) -> None:
    """Acknowledge `rule` (e.g. "AwsSolutions-L1") on `scope` and its children.

    With `findings`, only those findings are acknowledged, e.g. ["Resource::*"] for IAM5."""
    items = list(findings)
    ids = [f"{rule}[{finding}]" for finding in items] if items else [rule]
    Validations.of(scope).acknowledge(*(Acknowledgment(id=rule_id, reason=reason) for rule_id in ids))


def arn_finding(scope: IConstruct, cfn_resource: IConstruct, suffix: str) -> str:
    """The IAM5 finding text for `<resource Arn><suffix>`, as cdk-nag prints it:
    `Resource::<LogicalId.Arn>/changes/*`."""
    stack = Stack.of(scope)
    logical_id = stack.resolve(stack.get_logical_id(cfn_resource))  # type: ignore[arg-type]
    return f"Resource::<{logical_id}.Arn>{suffix}"


def resource_finding(scope: IConstruct, resource: str) -> str:
    """The IAM5 finding text for a resource string that may hold tokens, as cdk-nag prints it:
    `Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/...`."""
    resolved = Stack.of(scope).resolve(resource)
    parts = resolved["Fn::Join"][1] if isinstance(resolved, dict) else [resolved]
    return "Resource::" + "".join(_finding_text(part) for part in parts)


def _finding_text(part: object) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and "Ref" in part:
        return f"<{part['Ref']}>"
    if isinstance(part, dict) and "Fn::GetAtt" in part:
        return "<{}.{}>".format(*part["Fn::GetAtt"])
    raise ValueError(f"cannot render {part!r} as a cdk-nag finding")
