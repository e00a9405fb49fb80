"""
The one custom component of the bench's Airbyte manifest: the export endpoint answers rows as
arrays beside a `headers` array, and the declarative schema has no extractor that zips the two
(DpathExtractor selects records that already are objects).
"""

from dataclasses import InitVar, dataclass
from typing import Any, Iterable, Mapping

import requests
from airbyte_cdk.sources.declarative.extractors.record_extractor import RecordExtractor


@dataclass
class ZipRowsExtractor(RecordExtractor):
    parameters: InitVar[Mapping[str, Any]]

    def extract_records(self, response: requests.Response) -> Iterable[Mapping[str, Any]]:
        result = response.json()["result"]
        headers = result["headers"]
        for row in result["rows"]:
            yield dict(zip(headers, row))
