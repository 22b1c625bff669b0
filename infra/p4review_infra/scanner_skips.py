"""checkov and cfn-lint suppressions on the synthesized template, each with its written reason, as
the cdk-nag acknowledgments (nag.py) are. docs/infra.md ("Scanners") lists them all, and
tests/infra/test_scanners.py runs both scanners and requires 0 findings and a reason on every skip.

Both scanners read a resource's CloudFormation `Metadata`:

* checkov: `checkov: {skip: [{id, comment}]}`, one entry per check id;
* cfn-lint: `cfn-lint: {config: {ignore_checks: [rule]}}` (no comment field: the reason is kept
  here and in docs/infra.md).

Two ways in:

* `skip_checkov(construct, check_id, reason)`, from the construct that owns the resource, where the
  reason belongs to that one resource (an API method, a bucket);
* `ScannerSkips`, an aspect on the app (app.py), where the reason holds for every resource of a
  type whoever creates it (tables, secrets, queues, functions). A type skip whose reason depends on
  a property applies only while that property holds (SQS-managed encryption on, no VPC config)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jsii
from aws_cdk import CfnResource, CustomResourceProviderBase, IAspect
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct

CHECKOV_METADATA = "checkov"
CFN_LINT_METADATA = "cfn-lint"


def cfn_resource_of(construct: IConstruct) -> CfnResource:
    """The CloudFormation resource behind `construct`: itself, or its default child."""
    if isinstance(construct, CfnResource):
        return construct
    child = construct.node.default_child
    if not isinstance(child, CfnResource):
        raise TypeError(f"{construct.node.path} has no CloudFormation resource to annotate")
    return child


def skip_checkov(construct: IConstruct, check_id: str, reason: str) -> None:
    """Skip checkov's `check_id` on the resource behind `construct`, with `reason` as the comment."""
    if not reason.strip():
        raise ValueError(f"a checkov skip needs a reason: {check_id} on {construct.node.path}")
    resource = cfn_resource_of(construct)
    skips = list((resource.get_metadata(CHECKOV_METADATA) or {}).get("skip", []))
    if all(entry["id"] != check_id for entry in skips):
        skips.append({"id": check_id, "comment": reason})
        resource.add_metadata(CHECKOV_METADATA, {"skip": skips})


def ignore_cfn_lint(construct: IConstruct, rule: str) -> None:
    """Ignore cfn-lint's `rule` on the resource behind `construct` (keep the reason beside the call)."""
    resource = cfn_resource_of(construct)
    config = dict((resource.get_metadata(CFN_LINT_METADATA) or {}).get("config", {}))
    rules = list(config.get("ignore_checks", []))
    if rule not in rules:
        config["ignore_checks"] = [*rules, rule]
        resource.add_metadata(CFN_LINT_METADATA, {"config": config})


# -- skips by resource type ---------------------------------------------------------------------


@dataclass(frozen=True)
class TypeSkip:
    resource_type: str
    check_id: str
    reason: str
    # Applies only while this holds for the resource (e.g. the property the reason relies on).
    applies: Callable[[CfnResource], bool] = lambda _resource: True


def _sqs_managed_encryption(resource: CfnResource) -> bool:
    return isinstance(resource, sqs.CfnQueue) and resource.sqs_managed_sse_enabled is True


def _outside_a_vpc(resource: CfnResource) -> bool:
    return not (isinstance(resource, lambda_.CfnFunction) and resource.vpc_config is not None)


def _cdk_provider_handler(resource: CfnResource) -> bool:
    """The handler of a CDK-internal custom-resource provider (dev's S3 auto-delete-objects)."""
    return isinstance(resource.node.scope, CustomResourceProviderBase)


TYPE_SKIPS: tuple[TypeSkip, ...] = (
    TypeSkip(
        "AWS::DynamoDB::Table",
        "CKV_AWS_119",
        "Encrypted at rest with the AWS-managed key (aws/dynamodb). Each function's role is granted "
        "only the tables it uses, and a customer-managed key would be granted to exactly those roles, "
        "so it would add a key ($1/month) and KMS calls without changing who can read the items.",
    ),
    TypeSkip(
        "AWS::SecretsManager::Secret",
        "CKV_AWS_149",
        "Encrypted with the AWS-managed key (aws/secretsmanager). The stack grants GetSecretValue on a "
        "secret's ARN to the functions that use it alone; any other principal of the account with "
        "GetSecretValue on it (an administrator, a trigger host's sync identity) can read it too. A "
        "customer-managed key would add its key policy as a second gate against an over-broad IAM "
        "policy; the trade-off taken: a key per environment to manage, for an account whose IAM is "
        "already the boundary (docs/security.md).",
    ),
    TypeSkip(
        "AWS::SQS::Queue",
        "CKV_AWS_27",
        "Encrypted at rest with SQS-managed server-side encryption (SqsManagedSseEnabled: true), and "
        "the queue policy denies non-TLS access; checkov only recognises KmsMasterKeyId. Messages "
        "carry job ids and stage hand-offs, never diff content or credentials.",
        applies=_sqs_managed_encryption,
    ),
    TypeSkip(
        "AWS::Lambda::Function",
        "CKV_AWS_116",
        "A function's dead-letter queue catches asynchronous invocations only. The stage functions are "
        "driven by SQS event source mappings, whose redrive DLQs hold what fails; ingest is invoked "
        "synchronously by API Gateway and js-analyzers by review; the sweeper's 5-minute schedule "
        "invokes it with 0 retries and the next run redoes a failed one, and so does the credential-age "
        "check's 6-hour schedule (a failed check raises its own alarm); a rotation function is called "
        "by Secrets Manager, which retries a failed rotation itself (and its errors raise an alarm); "
        "CDK's provider handlers are called by CloudFormation, which reports their failures.",
    ),
    TypeSkip(
        "AWS::Lambda::Function",
        "CKV_AWS_117",
        "Not in a VPC: the function reaches only IAM-authenticated AWS APIs and HTTPS endpoints "
        "(Perforce over SSL, the LLM provider), which a VPC would not protect further; it would need "
        "NAT gateways or an interface endpoint per AWS service. Notify is placed in existing subnets "
        "when given (notifyVpcId, for an on-premises Swarm, Perforce server or SMTP relay).",
        applies=_outside_a_vpc,
    ),
    TypeSkip(
        "AWS::Lambda::Function",
        "CKV_AWS_173",
        "The environment holds resource names, queue URLs, secret ARNs and settings, never a secret "
        "value (credentials are read from Secrets Manager at run time), and Lambda encrypts it at rest "
        "with its service key; a customer-managed key would protect no secret, only add a key to grant.",
    ),
    TypeSkip(
        "AWS::Lambda::Function",
        "CKV_AWS_115",
        "CDK's own custom-resource provider (S3 auto-delete-objects, dev only): it runs during "
        "deployments only, called by CloudFormation, so there is no load to bound.",
        applies=_cdk_provider_handler,
    ),
)

# cfn-lint W3005: CDK makes a function depend on its whole role construct, which renders as
# DependsOn [<role>DefaultPolicy, <role>] (CDK's provider handlers: DependsOn [<role>]). The policy
# entry matters (the SQS event source mapping checks the role's permissions when it is created);
# the role entry repeats the Fn::GetAtt of Properties.Role. A construct-level dependency cannot be
# narrowed (CDK re-adds it at synth), so the duplicate is ignored rather than removed.
LINT_IGNORES: tuple[tuple[str, str], ...] = (("AWS::Lambda::Function", "W3005"),)


@jsii.implements(IAspect)
class ScannerSkips:
    """Adds the `TYPE_SKIPS` and `LINT_IGNORES` to every matching resource of the app."""

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, CfnResource):
            return
        for type_skip in TYPE_SKIPS:
            if node.cfn_resource_type == type_skip.resource_type and type_skip.applies(node):
                skip_checkov(node, type_skip.check_id, type_skip.reason)
        for resource_type, rule in LINT_IGNORES:
            if node.cfn_resource_type == resource_type:
                ignore_cfn_lint(node, rule)
