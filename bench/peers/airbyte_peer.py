"""
Airbyte's side of the peers' bench: the declarative manifest in airbyte/ run through the CDK's
own entrypoint (`source-declarative-manifest read` with a configured catalog) in a child process,
and its RECORD messages (JSON lines on the child's stdout) written to one CSV file here. Both
processes are measured: the bench samples the whole process tree. Input: the JSON object in
BENCH_PEER (see bench/peers/peer-input.ts); output: one JSON line, {"files": [the CSV file]}.
"""

import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def catalog(stream: str) -> dict:
    return {
        "streams": [
            {
                "stream": {"name": stream, "json_schema": {}, "supported_sync_modes": ["full_refresh"]},
                "sync_mode": "full_refresh",
                "destination_sync_mode": "overwrite",
            }
        ]
    }


def main() -> None:
    peer = json.loads(os.environ["BENCH_PEER"])
    work = peer["workDir"]
    config_file = os.path.join(work, "config.json")
    catalog_file = os.path.join(work, "catalog.json")
    with open(config_file, "w") as f:
        json.dump({key: peer[key] for key in ("url", "authUrl", "tileId", "clientId", "clientSecret", "audience", "query")}, f)
    with open(catalog_file, "w") as f:
        json.dump(catalog("incidents"), f)
    entrypoint = os.path.join(os.path.dirname(sys.executable), "source-declarative-manifest")
    command = [
        entrypoint, "read",
        "--config", config_file,
        "--catalog", catalog_file,
        "--manifest-path", os.path.join(HERE, "airbyte", "manifest.yaml"),
        "--components-path", os.path.join(HERE, "airbyte", "components.py"),
    ]
    # A manifest's custom components are code the CDK runs only when told it may.
    env = {**os.environ, "AIRBYTE_ENABLE_UNSAFE_CODE": "true"}
    os.makedirs(peer["outDir"], exist_ok=True)
    out_file = os.path.join(peer["outDir"], peer["table"] + ".csv")
    failure = None
    with subprocess.Popen(command, stdout=subprocess.PIPE, env=env, bufsize=1 << 20) as child, open(out_file, "w", newline="") as out:
        writer = None
        for line in child.stdout:
            message = json.loads(line)
            kind = message.get("type")
            if kind == "RECORD":
                data = message["record"]["data"]
                if writer is None:
                    writer = csv.DictWriter(out, fieldnames=list(data))
                    writer.writeheader()
                writer.writerow(data)
            elif kind == "TRACE" and message["trace"].get("type") == "ERROR":
                failure = message["trace"]["error"]["message"]
    if child.returncode != 0 or failure is not None:
        sys.stderr.write(f"airbyte peer: the CDK exited {child.returncode}: {failure}\n")
        sys.exit(1)
    sys.stdout.write(json.dumps({"files": [out_file]}) + "\n")


if __name__ == "__main__":
    main()
