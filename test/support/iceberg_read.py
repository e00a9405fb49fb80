"""The Iceberg tests' independent reader (run by test/support/iceberg-readers.ts with the venv of
scripts/install-iceberg-py.sh): one JSON request on stdin, one JSON answer on stdout.

Requests, by "op":
  avro            {"path"}: an Avro object container file read by fastavro: the header's schema
                  exactly as written (JSON text), its metadata (text), every record.
  parquet-fields  {"path"}: each column of a Parquet file as pyarrow reads it: name, type, field id.
  pyiceberg-scan  {"catalog": {...pyiceberg properties}, "catalogName"?, "table": "ns.name", "snapshotId"?, "filter"?}: the table's current
                  snapshot (or that snapshot: time travel) read by pyiceberg (its own metadata, manifest and Parquet readers),
                  filtered by a row filter when one is given.
  pyiceberg-filtered {"catalog", "catalogName"?, "table", "filters": [{"column", "op": "=" | ">=" | "<=", "value": text}]}: the table
                  read once per filter by pyiceberg, each a row filter of the column's own type (its literal made
                  from the text by the field's type), so the manifests' bounds prune as for any user's filter.
  pyiceberg-table {"catalog", "table"}: its snapshots (id, parent, summary), the schema's fields, the partition spec's fields.
  pyiceberg-write {"catalog", "table", "fields": [{name, type}], "rows"}: creates the table and
                  appends the rows (text) with pyiceberg's own writer.
  pyarrow-write   {"path", "fields": [{name, type, fieldId}], "rows", "options"}: a Parquet file written by pyarrow
                  alone with those pq.write_table options; answers its row groups and encodings.
  duckdb-scan     {"metadata": location, "s3"?: {endpoint, region, keyId, secret}}: the table read by
                  DuckDB 1.4.4's iceberg extension from that metadata file (iceberg_scan), nothing of
                  pyiceberg involved; with "s3", its httpfs extension reads s3:// through a secret
                  for that endpoint (path style, plain http).
  duckdb-filtered {"metadata", "filters"}: the table read by DuckDB once per filter, each a WHERE on the
                  column compared with the value cast to the column's type (the extension prunes files by bounds).

A scan's answer also names each column's type as that reader holds it ("types": pyarrow's for
pyiceberg, DuckDB's SQL types for DuckDB).

Values come back as text, so the test compares them with the CSV sink's text of the same rows and
no 64-bit integer passes through a JavaScript double: integers as their decimal digits, decimals
as plain digits without trailing zeros, dates as YYYY-MM-DD, timestamps as microseconds since the epoch,
doubles by repr (the shortest text that reads back as the same double), bytes as hex.
"""

import datetime
import decimal
import json
import os
import sys


def text(value):
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, decimal.Decimal):
        # Plain digits without trailing zeros, whatever the reader's scale: 2.500000000 -> 2.5, 0E-9 -> 0.
        # (Not Decimal.normalize: it rounds to the context's 28 digits.)
        text_ = format(value, 'f')
        if '.' in text_:
            text_ = text_.rstrip('0').rstrip('.')
        return '0' if text_ in ('-0', '0') else text_
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise ValueError(f'a timestamp without a zone: {value!r}')
        delta = value - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        return str((delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds)
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {key: text(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [text(item) for item in value]
    return str(value)


def arrow_rows(table):
    columns = table.column_names
    types = [str(field.type) for field in table.schema]
    return {'columns': columns, 'types': types, 'rows': [[text(row[name]) for name in columns] for row in table.to_pylist()]}


def read_avro(request):
    import fastavro

    with open(request['path'], 'rb') as handle:
        reader = fastavro.reader(handle)
        # fastavro's own parse drops attributes it does not know (field-id): the header's bytes
        # are read again as written, which is what Iceberg's readers see.
        metadata = {key: value.decode('utf-8', 'replace') if isinstance(value, bytes) else value for key, value in reader.metadata.items()}
        records = [text(record) for record in reader]
    return {'schema': metadata.get('avro.schema'), 'codec': metadata.get('avro.codec', 'null'), 'metadata': metadata, 'records': records}


def parquet_fields(request):
    import pyarrow.parquet as pq

    schema = pq.read_schema(request['path'])
    fields = []
    for field in schema:
        meta = field.metadata or {}
        field_id = meta.get(b'PARQUET:field_id')
        fields.append({'name': field.name, 'type': str(field.type), 'fieldId': None if field_id is None else int(field_id)})
    return {'fields': fields}


def load_table(request):
    from pyiceberg.catalog import load_catalog

    # A SQL catalog's name is its rows' catalog_name: the writer's name must be given.
    catalog = load_catalog(request.get('catalogName', 'tilehouse_test'), **request['catalog'])
    return catalog.load_table(request['table'])


def pyiceberg_scan(request):
    table = load_table(request)
    snapshot = request.get('snapshotId')
    # An optional row filter (pyiceberg's expression text), which prunes by the partition spec.
    options = {} if 'filter' not in request else {'row_filter': request['filter']}
    scan = table.scan(**options) if snapshot is None else table.scan(snapshot_id=int(snapshot), **options)
    return arrow_rows(scan.to_arrow())


def pyiceberg_filtered(request):
    from pyiceberg.expressions import EqualTo, GreaterThanOrEqual, LessThanOrEqual
    from pyiceberg.types import DecimalType, DoubleType, LongType

    table = load_table(request)
    fields = {field.name: field.field_type for field in table.schema().fields}
    operators = {'=': EqualTo, '>=': GreaterThanOrEqual, '<=': LessThanOrEqual}
    results = []
    for item in request['filters']:
        kind = fields[item['column']]
        value = item['value']
        # A date as its ISO text and a timestamp as its microseconds bind to the field's type; the others by Python value.
        if isinstance(kind, LongType) or str(kind) == 'timestamptz':
            value = int(value)
        elif isinstance(kind, DecimalType):
            # pyiceberg binds a decimal literal of the field's own scale only.
            with decimal.localcontext() as context:
                context.prec = 80
                value = decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-kind.scale))
        elif isinstance(kind, DoubleType):
            value = float(value)
        results.append(arrow_rows(table.scan(row_filter=operators[item['op']](item['column'], value)).to_arrow()))
    return {'results': results}


def duckdb_filtered(request):
    con = duckdb_connection(request)
    relation = con.sql('SELECT * FROM iceberg_scan(?)', params=[request['metadata']])
    columns = relation.columns
    kinds = {name: str(kind) for name, kind in zip(columns, relation.types)}
    select = ', '.join(f'epoch_us({quote(name)})' if kinds[name] == 'TIMESTAMP WITH TIME ZONE' else quote(name) for name in columns)
    results = []
    for item in request['filters']:
        kind = kinds[item['column']]
        if item['op'] not in ('=', '>=', '<='):
            raise ValueError(item['op'])
        value = 'make_timestamp(CAST(? AS BIGINT))::TIMESTAMPTZ' if kind == 'TIMESTAMP WITH TIME ZONE' else f'CAST(? AS {kind})'
        sql = f"SELECT {select} FROM iceberg_scan(?) WHERE {quote(item['column'])} {item['op']} {value}"
        rows = con.sql(sql, params=[request['metadata'], item['value']]).fetchall()
        results.append({'columns': columns, 'rows': [[text(value) for value in row] for row in rows]})
    return {'results': results}


def pyiceberg_table(request):
    table = load_table(request)
    metadata = table.metadata
    return {
        'formatVersion': metadata.format_version,
        'location': metadata.location,
        'metadataLocation': table.metadata_location,
        'currentSnapshotId': None if metadata.current_snapshot_id is None else str(metadata.current_snapshot_id),
        'snapshots': [
            {
                'id': str(snapshot.snapshot_id),
                'parent': None if snapshot.parent_snapshot_id is None else str(snapshot.parent_snapshot_id),
                'operation': snapshot.summary.operation.value if snapshot.summary else None,
                'summary': dict(snapshot.summary.additional_properties) if snapshot.summary else {},
            }
            for snapshot in metadata.snapshots
        ],
        'fields': [{'id': field.field_id, 'name': field.name, 'type': str(field.field_type), 'required': field.required} for field in table.schema().fields],
        'partitionSpec': [
            {'sourceId': field.source_id, 'fieldId': field.field_id, 'name': field.name, 'transform': str(field.transform)} for field in table.spec().fields
        ],
    }


def duckdb_scan(request):
    con = duckdb_connection(request)
    relation = con.sql('SELECT * FROM iceberg_scan(?)', params=[request['metadata']])
    columns = relation.columns
    # A zoned timestamp as microseconds in SQL: DuckDB's Python conversion of one needs pytz.
    select = ', '.join(
        f'epoch_us({quote(name)})' if str(kind) == 'TIMESTAMP WITH TIME ZONE' else quote(name) for name, kind in zip(columns, relation.types)
    )
    rows = con.sql(f'SELECT {select} FROM iceberg_scan(?)', params=[request['metadata']]).fetchall()
    return {'columns': columns, 'types': [str(kind) for kind in relation.types], 'rows': [[text(value) for value in row] for row in rows]}


def duckdb_connection(request):
    import duckdb
    import duckdb_ext

    # duckdb_ext is a namespace package: the folder that holds the iceberg wheel's files.
    extensions = next(os.path.join(folder, 'extensions') for folder in duckdb_ext.__path__ if os.path.exists(extension_file_in(folder, 'iceberg')))
    con = duckdb.connect(config={'extension_directory': extensions, 'autoinstall_known_extensions': False, 'autoload_known_extensions': False})
    con.execute('LOAD iceberg')
    con.execute("SET TimeZone = 'UTC'")
    s3 = request.get('s3')
    if s3 is not None:
        # duckdb_ext is a namespace package: the httpfs wheel's files may lie in another of its folders.
        con.execute(f"LOAD '{extension_file('httpfs')}'")
        endpoint = s3['endpoint'].split('://', 1)
        con.execute(
            'CREATE SECRET tilehouse_s3 (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE ?, USE_SSL ?)'.replace('?', '{}').format(
                *[sql_text(value) for value in (s3['keyId'], s3['secret'], s3['region'], endpoint[1], 'path')], 'true' if endpoint[0] == 'https' else 'false'
            )
        )
    return con


def extension_file(name):
    import duckdb_ext

    for folder in duckdb_ext.__path__:
        candidate = extension_file_in(folder, name)
        if os.path.exists(candidate):
            return candidate
    raise FileNotFoundError(f'the DuckDB extension {name} is not installed (duckdb-ext-{name} in scripts/iceberg-py/requirements.txt)')


def extension_file_in(folder, name):
    return os.path.join(folder, 'extensions', 'v1.4.4', 'linux_amd64', f'{name}.duckdb_extension')


def sql_text(value):
    return "'" + str(value).replace("'", "''") + "'"


def quote(name):
    return '"' + name.replace('"', '""') + '"'


def pyiceberg_write(request):
    """Creates the table with pyiceberg (field ids 1..n in the given order) and appends the rows
    (text, as this script answers them) with pyiceberg's own writer: a table another writer made."""
    import pyarrow as pa
    from pyiceberg.catalog import load_catalog
    from pyiceberg.exceptions import NamespaceAlreadyExistsError
    from pyiceberg.schema import Schema
    from pyiceberg.types import DateType, DecimalType, DoubleType, LongType, NestedField, StringType, TimestamptzType

    types = {
        'long': (LongType(), int),
        'decimal(38, 9)': (DecimalType(38, 9), decimal.Decimal),
        'string': (StringType(), str),
        'timestamptz': (TimestamptzType(), lambda t: datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=int(t))),
        'date': (DateType(), datetime.date.fromisoformat),
        'double': (DoubleType(), float),
    }
    fields = request['fields']
    catalog = load_catalog(request.get('catalogName', 'tilehouse_test'), **request['catalog'])
    try:
        catalog.create_namespace(request['table'].split('.')[0])
    except NamespaceAlreadyExistsError:
        pass
    schema = Schema(*[NestedField(index + 1, field['name'], types[field['type']][0], required=False) for index, field in enumerate(fields)])
    table = catalog.create_table(request['table'], schema=schema)
    columns = {}
    for index, field in enumerate(fields):
        convert = types[field['type']][1]
        columns[field['name']] = [None if row[index] is None else convert(row[index]) for row in request['rows']]
    table.append(pa.table(columns, schema=table.schema().as_arrow()))
    return {'snapshotId': str(table.current_snapshot().snapshot_id)}


def pyarrow_write(request):
    """A Parquet file written by pyarrow alone (no pyiceberg): the rows (text) in the given Iceberg
    types, each column with its PARQUET:field_id, with pyarrow's own options (codec, dictionary,
    data page version and size, row group size), for a reader of Parquet files to be checked on."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {
        'long': (pa.int64(), int),
        'decimal(38, 9)': (pa.decimal128(38, 9), decimal.Decimal),
        'string': (pa.string(), str),
        'timestamptz': (
            pa.timestamp('us', tz='UTC'),
            lambda t: datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=int(t)),
        ),
        'date': (pa.date32(), datetime.date.fromisoformat),
        'double': (pa.float64(), float),
    }
    fields = request['fields']
    schema = pa.schema(
        [pa.field(field['name'], types[field['type']][0], nullable=True, metadata={b'PARQUET:field_id': str(field['fieldId']).encode()}) for field in fields]
    )
    columns = [[None if row[index] is None else types[field['type']][1](row[index]) for row in request['rows']] for index, field in enumerate(fields)]
    table = pa.Table.from_arrays([pa.array(column, type=schema.field(index).type) for index, column in enumerate(columns)], schema=schema)
    pq.write_table(table, request['path'], **request['options'])
    metadata = pq.ParquetFile(request['path']).metadata
    chunks = [metadata.row_group(group).column(index) for group in range(metadata.num_row_groups) for index in range(metadata.num_columns)]
    return {'rowGroups': metadata.num_row_groups, 'encodings': sorted({encoding for chunk in chunks for encoding in chunk.encodings})}


OPS = {
    'pyarrow-write': pyarrow_write,
    'pyiceberg-write': pyiceberg_write,
    'avro': read_avro,
    'parquet-fields': parquet_fields,
    'pyiceberg-scan': pyiceberg_scan,
    'pyiceberg-table': pyiceberg_table,
    'pyiceberg-filtered': pyiceberg_filtered,
    'duckdb-filtered': duckdb_filtered,
    'duckdb-scan': duckdb_scan,
}


def main():
    request = json.load(sys.stdin)
    answer = OPS[request['op']](request)
    json.dump(answer, sys.stdout)


if __name__ == '__main__':
    main()
