"""The smoke scenario with OpenAPI Generator 4.3.1's python client, generated from the served 3.0 rendering.

Prints the report test/generators/scenarios/common.ts describes, as JSON."""
import json
import os
import re
import sys
from urllib.parse import parse_qs, urlparse

import openapi_client
from openapi_client.rest import ApiException

MISSING_BUILD = 999999


def setting(name):
    value = os.environ.get(name)
    if not value:
        raise SystemExit(f"{name} is not set")
    return value


def next_page(link):
    match = re.search(r'<([^>]+)>;\s*rel="next"', link or "")
    if not match:
        return None
    return int(parse_qs(urlparse(match.group(1)).query)["page"][0])


def refused(call):
    try:
        call()
    except ApiException as err:
        body = json.loads(err.body)
        return err.status, body
    raise RuntimeError("the call succeeded")


def main():
    config = openapi_client.Configuration(host=setting("WINDSOCK_URL"))
    config.access_token = setting("WINDSOCK_TOKEN")
    api = openapi_client.ApiClient(config)
    pipelines = openapi_client.PipelinesApi(api)
    builds = openapi_client.BuildsApi(api)
    org = setting("WINDSOCK_ORG")
    listed = pipelines.list_pipelines(org)
    created = pipelines.create_pipeline(
        org,
        openapi_client.CreatePipelineRequest(
            name=setting("WINDSOCK_NEW_PIPELINE"),
            repository="git@github.com:acme/app.git",
            configuration="steps:\n  - command: make test\n",
        ),
    )
    # The client checks a body against the schema before sending it; the 422 is the server's to
    # give, so the invalid body is built without that check.
    unchecked = openapi_client.Configuration()
    unchecked.client_side_validation = False
    new_build = lambda branch, checks=None: openapi_client.CreateBuildRequest(
        commit="HEAD", branch=branch, message="From a generated client", local_vars_configuration=checks
    )
    build = builds.create_build(org, created.slug, new_build("main"))
    got = builds.get_build(org, created.slug, build.number)
    pages = []
    page = 1
    while page is not None:
        data, _status, headers = builds.list_pipeline_builds_with_http_info(org, setting("WINDSOCK_PIPELINE"), page=page, per_page=2)
        pages.append([b.number for b in data])
        page = next_page(headers.get("Link"))
    invalid_status, invalid = refused(lambda: builds.create_build(org, created.slug, new_build("", unchecked)))
    missing_status, missing = refused(lambda: builds.get_build(org, created.slug, MISSING_BUILD))
    report = {
        "listed": [p.slug for p in listed],
        "created": created.slug,
        "build": {"number": build.number, "state": build.state},
        "got": got.number,
        "pages": pages,
        "invalid": {"status": invalid_status, "message": invalid["message"], "fields": [e["field"] for e in invalid.get("errors") or []]},
        "missing": {"status": missing_status, "message": missing["message"]},
    }
    sys.stdout.write(json.dumps(report))


if __name__ == "__main__":
    main()
