//! Encoding and decoding of fairmq-shm's metadata (`fairmq_shm::testing::meta`): the per-message work of the
//! wire format, a single 32-byte block record and multipart frames of 8 and 64 records.
//!
//! `cargo bench -p fairmq-benches --bench meta_codec`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fairmq_shm::testing::meta::{decode, encode_parts, encode_single, RcHandle, Record};
use std::hint::black_box;
use std::time::Duration;

fn block(i: u64) -> Record {
    Record::Block { segment: 0, offset: 4096 + i * 1088, delta: 32, size: 1024, slot: i as u32, generation: 1 }
}

fn single(c: &mut Criterion) {
    let mut g = c.benchmark_group("meta_single");
    g.throughput(Throughput::Elements(1));
    let region = Record::Region {
        region: 3,
        offset: 1 << 20,
        size: 4096,
        hint: 7,
        rc: Some(RcHandle { segment: 0, offset: 8192, delta: 32 }),
    };
    for (name, rec) in [("block", block(1)), ("region", region), ("empty", Record::Empty)] {
        let mut buf = Vec::with_capacity(64);
        g.bench_function(BenchmarkId::new("encode", name), |b| {
            b.iter(|| {
                encode_single(black_box(&rec), 0, &mut buf);
                black_box(buf.len())
            })
        });
        encode_single(&rec, 0, &mut buf);
        let mut out = Vec::with_capacity(1);
        g.bench_function(BenchmarkId::new("decode", name), |b| {
            b.iter(|| {
                out.clear();
                decode(black_box(&buf), &mut out).expect("valid");
                black_box(out[0])
            })
        });
    }
    g.finish();
}

fn multipart(c: &mut Criterion) {
    let mut g = c.benchmark_group("meta_parts");
    for n in [8u64, 64] {
        g.throughput(Throughput::Elements(n));
        let records: Vec<Record> = (0..n).map(block).collect();
        let mut buf = Vec::with_capacity(
            fairmq_shm::testing::meta::MULTI_LEN + fairmq_shm::testing::meta::BLOCK_LEN * n as usize,
        );
        g.bench_with_input(BenchmarkId::new("encode", n), &records, |b, records| {
            b.iter(|| {
                encode_parts(black_box(records).iter().copied(), 0, &mut buf);
                black_box(buf.len())
            })
        });
        encode_parts(records.iter().copied(), 0, &mut buf);
        let mut out = Vec::with_capacity(n as usize);
        g.bench_with_input(BenchmarkId::new("decode", n), &buf, |b, buf| {
            b.iter(|| {
                out.clear();
                decode(black_box(buf), &mut out).expect("valid");
                black_box(out.len())
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = single, multipart
}
criterion_main!(benches);
