"""
dlt's side of the peers' bench: the bench export (token, then the export endpoint page by page)
as a dlt resource over dlt's RESTClient, loaded by a pipeline into a filesystem destination as
CSV. Input: the JSON object in BENCH_PEER (see bench/peers/peer-input.ts); output: one JSON line
on stdout, {"files": [the CSV files of the table]} (the bench counts their rows).
"""

import glob
import json
import os
import sys

import dlt
from dlt.sources.helpers.rest_client import RESTClient
from dlt.sources.helpers.rest_client.auth import OAuth2ClientCredentials
from dlt.sources.helpers.rest_client.paginators import PageNumberPaginator


class JsonClientCredentials(OAuth2ClientCredentials):
    """dlt's client-credentials flow sends a form body; the API's token endpoint takes JSON."""

    def build_access_token_request(self):
        return {
            "headers": {"Content-Type": "application/json"},
            "json": {
                "client_id": self.client_id,
                "client_secret": self.client_secret,
                "grant_type": "client_credentials",
                **self.access_token_request_data,
            },
        }


def main() -> None:
    peer = json.loads(os.environ["BENCH_PEER"])
    client = RESTClient(
        base_url=peer["url"],
        auth=JsonClientCredentials(
            access_token_url=peer["authUrl"] + "/oauth/token",
            client_id=peer["clientId"],
            client_secret=peer["clientSecret"],
            access_token_request_data={"audience": peer["audience"]},
        ),
        # The page number goes into the body's options.pageNumber; hasNext says when to stop.
        paginator=PageNumberPaginator(
            base_page=0,
            page_body_path="options.pageNumber",
            total_path=None,
            has_more_path="result.navigation.hasNext",
        ),
    )

    @dlt.resource(name=peer["table"])
    def incidents():
        for page in client.paginate(
            "/api/v1/topics/incident/execute",
            method="POST",
            params={"tileId": peer["tileId"]},
            json=peer["query"],
            data_selector="result",
        ):
            for result in page:
                headers = result["headers"]
                yield [dict(zip(headers, row)) for row in result["rows"]]

    pipeline = dlt.pipeline(
        pipeline_name="peers_dlt",
        pipelines_dir=os.path.join(peer["workDir"], "pipelines"),
        destination=dlt.destinations.filesystem(bucket_url=peer["outDir"]),
        dataset_name="bench",
    )
    pipeline.run(incidents(), loader_file_format="csv")
    files = sorted(glob.glob(os.path.join(peer["outDir"], "bench", peer["table"], "*.csv")))
    sys.stdout.write(json.dumps({"files": files}) + "\n")


if __name__ == "__main__":
    main()
