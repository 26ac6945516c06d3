//! Micro-benchmarks of the hot primitives of a build: ranking, unranking, sequential
//! iteration, move generation, un-move generation and the ranking of predecessors.
//!
//! Everything runs on 6 pits per side, level 20 (80,214,915 stored positions), over a
//! fixed pseudo-random sample of stored positions made once outside the timed loops, so
//! that runs compare. Throughput is in positions (elements) per second.
//!
//! ```text
//! cargo bench --bench core                 # full run
//! cargo bench --bench core -- --quick      # a few seconds per benchmark
//! cargo bench --bench core -- unmove       # only the benchmarks matching a filter
//! ```

use std::hint::black_box;

use awari::expert::rules::{
    for_each_exit, for_each_unmove, for_each_unmove_near, legal_moves, Exits,
};
use awari::expert::{Board, Index, RankBase};
use awari::Rules;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// Pits per side.
const P: usize = 6;
/// Seeds on the board: the level benchmarked.
const N: usize = 20;
/// Positions in the sample.
const SAMPLE: usize = 4096;
/// Steps of `Index::next` per iteration of the `next` benchmark.
const STEPS: usize = 1 << 16;

/// The level's index tables and a deterministic sample of its positions.
struct Fixture {
    index: Index,
    ranks: Vec<u64>,
    boards: Vec<Board>,
}

impl Fixture {
    fn new() -> Fixture {
        let index = Index::new(P, N).expect("index tables");
        let size = index.level_size(N);
        assert_eq!(size, 80_214_915);
        // A 64-bit LCG (Knuth's MMIX constants); the high bits pick ranks spread over
        // the whole level, in an order that defeats branch prediction as a build does.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let ranks: Vec<u64> = (0..SAMPLE)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((x >> 32) * size) >> 32
            })
            .collect();
        let boards: Vec<Board> = ranks.iter().map(|&r| index.unrank(N, r)).collect();
        for (b, &r) in boards.iter().zip(&ranks) {
            assert!(b.is_stored());
            assert_eq!(index.rank(b), r);
        }
        Fixture {
            index,
            ranks,
            boards,
        }
    }
}

fn id() -> BenchmarkId {
    BenchmarkId::from_parameter(format!("p{P}_n{N}"))
}

fn bench_rank(c: &mut Criterion, f: &Fixture) {
    let mut g = c.benchmark_group("rank");
    g.throughput(Throughput::Elements(f.boards.len() as u64));
    g.bench_function(id(), |bch| {
        bch.iter(|| {
            let mut sum = 0u64;
            for b in &f.boards {
                sum = sum.wrapping_add(f.index.rank_in(black_box(b), N));
            }
            sum
        })
    });
    g.finish();
}

fn bench_unrank(c: &mut Criterion, f: &Fixture) {
    let mut g = c.benchmark_group("unrank");
    g.throughput(Throughput::Elements(f.ranks.len() as u64));
    g.bench_function(id(), |bch| {
        bch.iter(|| {
            for &r in &f.ranks {
                black_box(f.index.unrank(N, black_box(r)));
            }
        })
    });
    g.finish();
}

fn bench_next(c: &mut Criterion, f: &Fixture) {
    let mut g = c.benchmark_group("next");
    g.throughput(Throughput::Elements(STEPS as u64));
    // Start in the middle of the level, far enough from its end for every step.
    let start = f.index.unrank(N, f.index.level_size(N) / 2);
    g.bench_function(id(), |bch| {
        bch.iter(|| {
            let mut b = black_box(start);
            let mut more = true;
            for _ in 0..STEPS {
                more &= f.index.next(&mut b);
            }
            assert!(more);
            b
        })
    });
    g.finish();
}

fn bench_legal_moves(c: &mut Criterion, f: &Fixture) {
    let mut g = c.benchmark_group("legal_moves");
    g.throughput(Throughput::Elements(f.boards.len() as u64));
    for rules in [Rules::Awari, Rules::Oware] {
        g.bench_function(BenchmarkId::from_parameter(rules), |bch| {
            bch.iter(|| {
                for b in &f.boards {
                    // The whole list, children included, escapes.
                    black_box(legal_moves(black_box(b), rules));
                }
            })
        });
    }
    g.finish();
}

fn bench_for_each_exit(c: &mut Criterion, f: &Fixture) {
    let mut g = c.benchmark_group("for_each_exit");
    g.throughput(Throughput::Elements(f.boards.len() as u64));
    let rules = Rules::Awari;
    g.bench_function(BenchmarkId::from_parameter(rules), |bch| {
        bch.iter(|| {
            let mut acc = 0u64;
            for b in &f.boards {
                let exits = for_each_exit(black_box(b), rules, |captured, child| {
                    // Touch the child as the solver does (it ranks or probes it).
                    acc += captured as u64 + black_box(child).get(0) as u64;
                });
                if let Exits::Moves { stay } = exits {
                    acc += stay as u64;
                }
            }
            acc
        })
    });
    g.finish();
}

fn bench_for_each_unmove(c: &mut Criterion, f: &Fixture) {
    let mut g = c.benchmark_group("for_each_unmove");
    g.throughput(Throughput::Elements(f.boards.len() as u64));
    for rules in [Rules::Awari, Rules::Oware] {
        g.bench_function(BenchmarkId::from_parameter(rules), |bch| {
            bch.iter(|| {
                let (mut preds, mut stored) = (0u64, 0u64);
                for b in &f.boards {
                    for_each_unmove(black_box(b), rules, |parent, is_stored| {
                        black_box(parent);
                        preds += 1;
                        stored += is_stored as u64;
                    });
                }
                (preds, stored)
            })
        });
    }
    g.finish();
}

/// The backward pass's inner work per settled position: its predecessors, each stored
/// one ranked. "full" ranks each from scratch; "near" ranks each from the board it is
/// un-sown from, only below the highest pit un-sowing touched.
fn bench_predecessor_ranks(c: &mut Criterion, f: &Fixture) {
    let mut g = c.benchmark_group("predecessor_ranks");
    g.throughput(Throughput::Elements(f.boards.len() as u64));
    let rules = Rules::Awari;
    g.bench_function("full", |bch| {
        bch.iter(|| {
            let mut sum = 0u64;
            for b in &f.boards {
                for_each_unmove(black_box(b), rules, |q, stored| {
                    if stored {
                        sum = sum.wrapping_add(f.index.rank_in(q, N));
                    }
                });
            }
            sum
        })
    });
    g.bench_function("near", |bch| {
        bch.iter(|| {
            let mut sum = 0u64;
            let made = &mut RankBase::default();
            for b in &f.boards {
                let base_of = |base: &Board, out: &mut RankBase| f.index.rank_base(base, N, out);
                for_each_unmove_near(
                    black_box(b),
                    rules,
                    made,
                    base_of,
                    |q, stored, top, near, _| {
                        if stored {
                            sum = sum.wrapping_add(f.index.rank_near(near, q, top));
                        }
                    },
                );
            }
            sum
        })
    });
    g.finish();
}

fn all(c: &mut Criterion) {
    let f = Fixture::new();
    bench_rank(c, &f);
    bench_unrank(c, &f);
    bench_next(c, &f);
    bench_legal_moves(c, &f);
    bench_for_each_exit(c, &f);
    bench_for_each_unmove(c, &f);
    bench_predecessor_ranks(c, &f);
}

criterion_group!(benches, all);
criterion_main!(benches);
