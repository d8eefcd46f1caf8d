"""Reads one Parquet file for fanout-partition's tables (datasets/parquet_table.cc runs it as
`python3 -c THIS_TEXT FILE COLUMN...`; docs/DATA.md). Apache Arrow's own reader (pyarrow) decodes the
file row group by row group, in batches of at most 65,536 rows, and the named columns' values go to
standard output as binary (no text in between):

  header:  b"FNPQ0001", u32 columns, u32 row groups, u64 rows; per column: u8 kind, u32 name length, name
  batch:   u32 1, u32 row group, u64 rows n; per column: n validity bytes (1 = a value), then
           int (kind 1): n int64 | float (2): n float64 | bool (3): n bytes |
           string (4): n + 1 int64 offsets from 0, then the bytes | list (5): n + 1 offsets, then float64 values
  end:     u32 2, u32 0, u64 0

All little-endian. Failures go to standard error as one line, TAG<TAB>details, with an exit code of 3 or more:
MISSING (a column the file lacks, and the columns it has), TYPE (a column of a type no kind takes), VALUE (a
value no kind holds, e.g. an unsigned id past int64), NOPYARROW, BADFILE. Needs pyarrow and numpy only.
"""
import struct
import sys

KIND_INT, KIND_FLOAT, KIND_BOOL, KIND_STRING, KIND_LIST = 1, 2, 3, 4, 5
BATCH_ROWS = 65536


def fail(code, tag, *details):
    sys.stderr.write("\t".join((tag,) + tuple(str(d).replace("\n", " ") for d in details)) + "\n")
    sys.stderr.flush()
    sys.exit(code)


def kind_of(pa, t):
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t) or pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_duration(t):
        return KIND_INT
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return KIND_FLOAT
    if pa.types.is_boolean(t):
        return KIND_BOOL
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return KIND_STRING
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        v = t.value_type
        if pa.types.is_integer(v) or pa.types.is_floating(v):
            return KIND_LIST
    return None


def encode(np, pa, a, kind, name, rg):
    """The bytes of column `a` (one batch): validity, then the values."""
    n = len(a)
    if pa.types.is_dictionary(a.type):
        a = a.dictionary_decode()
    parts = [a.is_valid().to_numpy(zero_copy_only=False).astype(np.uint8).tobytes()]
    try:
        if kind == KIND_INT:
            if not pa.types.is_integer(a.type):
                a = a.cast(pa.int64())  # timestamps, dates and durations: their integer in the column's unit
            a = a.cast(pa.int64())  # safe: an unsigned value past int64 raises
            parts.append(a.fill_null(0).to_numpy(zero_copy_only=False).astype("<i8").tobytes())
        elif kind == KIND_FLOAT:
            a = a.cast(pa.float64())
            parts.append(a.fill_null(0).to_numpy(zero_copy_only=False).astype("<f8").tobytes())
        elif kind == KIND_BOOL:
            parts.append(a.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8).tobytes())
        elif kind == KIND_STRING:
            a = a.cast(pa.large_string())
            bufs = a.buffers()
            offs = np.frombuffer(bufs[1], dtype="<i8")[a.offset:a.offset + n + 1] if n else np.zeros(1, "<i8")
            first, last = int(offs[0]), int(offs[-1])
            parts.append((offs - first).astype("<i8").tobytes())
            parts.append(bytes(bufs[2])[first:last] if bufs[2] is not None and last > first else b"")
        elif pa.types.is_fixed_size_list(a.type):  # a null row keeps its slots (its validity says null)
            size = a.type.list_size
            values = a.values.slice(a.offset * size, n * size).cast(pa.float64())
            if values.null_count:
                valid = a.is_valid().to_numpy(zero_copy_only=False)
                if (values.is_null().to_numpy(zero_copy_only=False).reshape(n, size).any(axis=1) & valid).any():
                    fail(5, "VALUE", name, rg, "a list holds a null value")
            parts.append((np.arange(n + 1, dtype=np.int64) * size).astype("<i8").tobytes())
            parts.append(values.fill_null(0).to_numpy(zero_copy_only=False).astype("<f8").tobytes())
        else:
            a = a.cast(pa.large_list(pa.float64()))
            offs = a.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
            first, last = int(offs[0]), int(offs[-1])
            values = a.values.slice(first, last - first)
            if values.null_count:
                fail(5, "VALUE", name, rg, "a list holds a null value")
            parts.append((offs - first).astype("<i8").tobytes())
            parts.append(values.to_numpy(zero_copy_only=False).astype("<f8").tobytes())
    except pa.ArrowInvalid as e:
        fail(5, "VALUE", name, rg, e)
    return parts


def main():
    args = sys.argv[1:]
    first, end = 0, -1  # row groups [first, end); end -1: to the last
    if args and args[0].startswith("--row-groups="):
        try:
            first, end = (int(x) for x in args.pop(0).split("=", 1)[1].split(":"))
        except ValueError:
            fail(3, "USAGE", "--row-groups=FIRST:END FILE COLUMN...")
    if not args:
        fail(3, "USAGE", "[--row-groups=FIRST:END] FILE COLUMN...")
    path, wanted = args[0], args[1:]
    try:
        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        fail(6, "NOPYARROW", e)
    try:
        f = pq.ParquetFile(path)
        schema = f.schema_arrow
    except Exception as e:  # noqa: BLE001 - any decoding failure is the file's
        fail(7, "BADFILE", e)
    names = schema.names
    kinds = []
    for w in wanted:
        if w not in names:
            fail(3, "MISSING", w, ", ".join(names[:12]) + (", ..." if len(names) > 12 else ""))
        k = kind_of(pa, schema.field(w).type)
        if k is None:
            fail(4, "TYPE", w, schema.field(w).type)
        kinds.append(k)
    out = sys.stdout.buffer
    head = [b"FNPQ0001", struct.pack("<IIQ", len(wanted), f.num_row_groups, f.metadata.num_rows)]
    for w, k in zip(wanted, kinds):
        b = w.encode()
        head.append(struct.pack("<BI", k, len(b)) + b)
    out.write(b"".join(head))
    try:
        for rg in range(first, f.num_row_groups if end < 0 else min(end, f.num_row_groups)):
            for batch in f.iter_batches(batch_size=BATCH_ROWS, row_groups=[rg], columns=list(dict.fromkeys(wanted)),
                                        use_threads=False):
                out.write(struct.pack("<IIQ", 1, rg, batch.num_rows))
                for w, k in zip(wanted, kinds):
                    for p in encode(np, pa, batch.column(w), k, w, rg):
                        out.write(p)
    except BrokenPipeError:
        sys.exit(8)  # the reader stopped (it found an error of its own)
    except (OSError, pa.ArrowException) as e:
        fail(7, "BADFILE", e)
    out.write(struct.pack("<IIQ", 2, 0, 0))
    out.flush()


if __name__ == "__main__":
    main()
