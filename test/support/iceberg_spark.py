"""Spark as the Iceberg tests' third reader, and a writer of tables for tilehouse to append onto (run
by test/support/iceberg-spark.ts with the venv and jars of scripts/install-iceberg-spark.sh).

One Spark session per process, started once (tens of seconds) and then asked many things: one JSON
request per line on stdin, one JSON answer per line on file descriptor 3 (Spark's JVM writes to
stdout and stderr as it likes; it does not inherit descriptor 3). The first answer, before any
request, is {"ready": true} once the session is up. An answer is {"ok": ...} or {"error": text}.

The session: local[1], a small driver, no UI, one shuffle partition, bound to 127.0.0.1, the
Iceberg runtime and the PostgreSQL driver from the jars given in $ICEBERG_SPARK_JARS (nothing
fetched), session time zone UTC.

Requests, by "op":
  catalog   {"name", "properties"}: registers an Iceberg catalog (org.apache.iceberg.spark.SparkCatalog)
            under that name with those properties (type rest / jdbc, uri, warehouse, ...). For a
            JDBC catalog the name must be the catalog_name of its rows.
  read      {"table": "catalog.ns.name"}: the table's current snapshot, read by Spark (Iceberg's
            Java readers): {"columns", "rows"}, values as text by iceberg_read.py's rules,
            {"types"}: each column's Spark SQL type (bigint, decimal(38,9), timestamp, ...), and
            {"count"}: Spark's COUNT(*), which it answers from the data files' record counts.
  partitions {"table", "metadataTable"?}: how Spark sees the table's partitioning: {"spec": the
            current spec's fields [{name, transform, source, fieldId}] from Iceberg's Java table,
            "partitioning": DESCRIBE TABLE's "# Partitioning" lines (Spark's own words, e.g.
            days(day)), "files": each data file of the current snapshot as Spark's scan plans it
            [{partition: the spec's path text, records}]}, and with "metadataTable" true, "rows":
            SELECT partition, record_count, file_count FROM the table's `partitions` metadata table
            (not through the REST test server: see iceberg_table).
  create    {"table", "fields": [{name, type}], "rows"}: creates the table (format version 2, the
            namespace too) and, when rows are given, appends them (text, as answered): {"snapshotId"}.
  append    {"table", "rows"}: appends rows (text, in the table's column order): {"snapshotId"}.
  snapshots {"table"}: {"currentSnapshotId", "snapshots": [{id, parent, operation, summary,
            sequenceNumber}] as the metadata lists them, "history": the snapshot log's ids}, from
            Iceberg's Java table in Spark's session.
"""

import json
import os
import sys
import tempfile
import traceback

from iceberg_read import text

# Iceberg type (as the tests and pyiceberg spell it) -> Spark SQL type.
SPARK_TYPES = {
    'long': 'BIGINT',
    'decimal(38, 9)': 'DECIMAL(38, 9)',
    'string': 'STRING',
    'timestamptz': 'TIMESTAMP',
    'date': 'DATE',
    'double': 'DOUBLE',
}


def start_session(scratch):
    from pyspark.sql import SparkSession

    jars = os.environ['ICEBERG_SPARK_JARS']
    return (
        SparkSession.builder.master('local[1]')
        .appName('tilehouse-iceberg-tests')
        .config('spark.jars', jars)
        .config('spark.driver.memory', os.environ.get('ICEBERG_SPARK_DRIVER_MEMORY', '768m'))
        .config('spark.driver.host', '127.0.0.1')
        .config('spark.driver.bindAddress', '127.0.0.1')
        .config('spark.ui.enabled', 'false')
        .config('spark.ui.showConsoleProgress', 'false')
        .config('spark.sql.shuffle.partitions', '1')
        .config('spark.default.parallelism', '1')
        .config('spark.sql.session.timeZone', 'UTC')
        .config('spark.sql.catalogImplementation', 'in-memory')
        .config('spark.sql.warehouse.dir', os.path.join(scratch, 'spark-warehouse'))
        .config('spark.local.dir', os.path.join(scratch, 'local'))
        .config('spark.sql.extensions', 'org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions')
        .getOrCreate()
    )


def quote(name):
    return '`' + name.replace('`', '``') + '`'


def identifier(table):
    return '.'.join(quote(part) for part in table.split('.'))


def add_catalog(spark, request):
    name = request['name']
    spark.conf.set(f'spark.sql.catalog.{name}', 'org.apache.iceberg.spark.SparkCatalog')
    for key, value in request['properties'].items():
        spark.conf.set(f'spark.sql.catalog.{name}.{key}', value)
    return {'name': name}


def read(spark, request):
    from pyspark.sql.types import TimestampNTZType, TimestampType

    frame = spark.table(identifier(request['table']))
    columns = frame.columns
    selected = []
    for field in frame.schema.fields:
        if isinstance(field.dataType, TimestampNTZType):
            raise ValueError(f'{field.name} is a timestamp without a zone')
        # A zoned timestamp as microseconds since the epoch, computed by Spark: no Python datetime.
        selected.append(f'unix_micros({quote(field.name)})' if isinstance(field.dataType, TimestampType) else quote(field.name))
    rows = frame.selectExpr(*selected).collect()
    # COUNT(*) is answered from the manifests' record counts (Iceberg's aggregate push-down), not by reading the rows.
    count = spark.sql(f'SELECT COUNT(*) FROM {identifier(request["table"])}').collect()[0][0]
    types = [field.dataType.simpleString() for field in frame.schema.fields]
    return {'columns': columns, 'types': types, 'rows': [[text(value) for value in row] for row in rows], 'count': count}


def partitions(spark, request):
    name = request['table']
    table = iceberg_table(spark, name)
    spec = table.spec()
    schema = table.schema()
    fields = [
        {'name': field.name(), 'transform': str(field.transform()), 'source': schema.findColumnName(field.sourceId()), 'fieldId': field.fieldId()}
        for field in spec.fields()
    ]
    # DESCRIBE TABLE lists a v2 table's partitioning after its columns: '# Partitioning', then 'Part 0' | 'days(day)'.
    described = [(row[0], row[1]) for row in spark.sql(f'DESCRIBE TABLE {identifier(name)}').collect()]
    heading = next((index for index, (column, _) in enumerate(described) if column == '# Partitioning'), None)
    partitioning = []
    if heading is not None:
        for column, kind in described[heading + 1 :]:
            if not column.startswith('Part '):
                break
            partitioning.append(kind)
    files = []
    tasks = table.newScan().planFiles()
    try:
        iterator = tasks.iterator()
        while iterator.hasNext():
            data_file = iterator.next().file()
            files.append({'partition': spec.partitionToPath(data_file.partition()), 'records': str(data_file.recordCount())})
    finally:
        tasks.close()
    answer = {'spec': fields, 'partitioning': partitioning, 'files': files}
    if request.get('metadataTable'):
        rows = spark.sql(f'SELECT partition, record_count, file_count FROM {identifier(name + ".partitions")}').collect()
        answer['rows'] = [[text(value) for value in row] for row in rows]
    return answer


def append_rows(spark, table, rows):
    """Appends rows given as text: each column cast by Spark from the text to the table's type."""
    from pyspark.sql.types import StringType, StructField, StructType, TimestampType

    fields = spark.table(identifier(table)).schema.fields
    staged = StructType([StructField(f'c{index}', StringType(), True) for index in range(len(fields))])
    frame = spark.createDataFrame([list(row) for row in rows], staged)
    casts = [
        f'timestamp_micros(CAST(c{index} AS BIGINT)) AS {quote(field.name)}'
        if isinstance(field.dataType, TimestampType)
        else f'CAST(c{index} AS {field.dataType.simpleString()}) AS {quote(field.name)}'
        for index, field in enumerate(fields)
    ]
    frame.selectExpr(*casts).writeTo(identifier(table)).append()
    return current_snapshot_id(spark, table)


def iceberg_table(spark, table):
    """The table as Iceberg's Java API in Spark's session holds it (Spark's catalog resolves the name).

    Not Spark's metadata tables (`SELECT ... FROM cat.ns.t.snapshots`): for those SparkCatalog first
    asks the catalog for a table `snapshots` in namespace `ns.t`, and the REST test server's Jetty
    refuses that namespace's %1F separator with 400 ("Suspicious Path Character") where a catalog
    answers 404, so Spark never falls back to the metadata table.
    """
    jvm = spark.sparkContext._jvm
    return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table)


def current_snapshot_id(spark, table):
    snapshot = iceberg_table(spark, table).currentSnapshot()
    return None if snapshot is None else str(snapshot.snapshotId())


def create(spark, request):
    table = request['table']
    parts = table.split('.')
    spark.sql(f'CREATE NAMESPACE IF NOT EXISTS {identifier(".".join(parts[:-1]))}')
    columns = ', '.join(f'{quote(field["name"])} {SPARK_TYPES[field["type"]]}' for field in request['fields'])
    spark.sql(f"CREATE TABLE {identifier(table)} ({columns}) USING iceberg TBLPROPERTIES ('format-version' = '2')")
    snapshot = append_rows(spark, table, request['rows']) if request.get('rows') else None
    return {'snapshotId': snapshot}


def append(spark, request):
    return {'snapshotId': append_rows(spark, request['table'], request['rows'])}


def snapshots(spark, request):
    table = iceberg_table(spark, request['table'])
    current = table.currentSnapshot()
    listed = []
    iterator = table.snapshots().iterator()
    while iterator.hasNext():
        snapshot = iterator.next()
        parent = snapshot.parentId()
        listed.append(
            {
                'id': str(snapshot.snapshotId()),
                'parent': None if parent is None else str(parent),
                'operation': snapshot.operation(),
                'summary': {str(key): str(value) for key, value in dict(snapshot.summary()).items()},
                'sequenceNumber': str(snapshot.sequenceNumber()),
            }
        )
    log = table.history().iterator()
    history = []
    while log.hasNext():
        history.append(str(log.next().snapshotId()))
    return {'currentSnapshotId': None if current is None else str(current.snapshotId()), 'snapshots': listed, 'history': history}


def failure(error):
    """What failed, head first: a Java exception's message before its (long) stack trace."""
    where = ''.join(traceback.format_tb(error.__traceback__, limit=4))
    return f'{type(error).__name__}: {str(error)[:4000]}\n{where}'


OPS = {'catalog': add_catalog, 'read': read, 'partitions': partitions, 'create': create, 'append': append, 'snapshots': snapshots}


def main():
    answers = os.fdopen(3, 'w', buffering=1)

    def answer(value):
        answers.write(json.dumps(value) + '\n')
        answers.flush()

    with tempfile.TemporaryDirectory(prefix='tilehouse-spark-') as scratch:
        spark = start_session(scratch)
        spark.sparkContext.setLogLevel('WARN')
        answer({'ready': True, 'spark': spark.version})
        try:
            for line in iter(sys.stdin.readline, ''):
                if not line.strip():
                    continue
                try:
                    request = json.loads(line)
                    answer({'ok': OPS[request['op']](spark, request)})
                except Exception as error:  # noqa: BLE001 -- every failure is the test's to see, and the session goes on
                    answer({'error': failure(error)})
        finally:
            spark.stop()


if __name__ == '__main__':
    main()
