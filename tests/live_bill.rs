//! The bill Pi records, with and without bonsai's package, on shapes of work the policy was
//! not tuned on: tool turns, chat-only turns, a small window, big outputs, long sessions, and
//! a model with no cache discount. Real Pi in RPC mode against a fake model on 127.0.0.1 whose
//! cache holds only the previous request's start (as providers do) and whose answers are as
//! long as a model's. Pi records each reply's cost from the prices in models.json; summary
//! calls are in the bill.

mod common;

use common::fake_openai::{Reply, is_summary_request};
use common::live_pi::{self, PiBin, Prices, Rpc, World};
use serde_json::{Value, json};

/// What a turn is.
#[derive(Clone, Copy, Debug)]
enum Work {
    /// A request, a `bash` call that prints a log of about this many bytes, an answer.
    Tool { bytes: usize },
    /// A request of a paragraph and an answer: no tool.
    Chat,
}

#[derive(Clone, Copy, Debug)]
struct Shape {
    name: &'static str,
    turns: usize,
    window: u64,
    work: Work,
    prices: Prices,
    /// The most the package's bill may be of Pi alone's.
    at_most: f64,
}

const SHAPES: [Shape; 6] = [
    Shape {
        name: "tool turns",
        turns: 60,
        window: 200_000,
        work: Work::Tool { bytes: 6_000 },
        prices: live_pi::CACHING,
        at_most: 0.6,
    },
    Shape {
        name: "chat-only turns",
        turns: 300,
        window: 200_000,
        work: Work::Chat,
        prices: live_pi::CACHING,
        at_most: 0.6,
    },
    Shape {
        name: "a 64k window",
        turns: 150,
        window: 64_000,
        work: Work::Tool { bytes: 6_000 },
        prices: live_pi::CACHING,
        at_most: 0.6,
    },
    Shape {
        name: "20-40 KB outputs",
        turns: 60,
        window: 200_000,
        work: Work::Tool { bytes: 30_000 },
        prices: live_pi::CACHING,
        at_most: 0.6,
    },
    Shape {
        name: "200 tool turns",
        turns: 200,
        window: 200_000,
        work: Work::Tool { bytes: 6_000 },
        prices: live_pi::CACHING,
        at_most: 0.35,
    },
    Shape {
        name: "no cache discount",
        turns: 60,
        window: 200_000,
        work: Work::Tool { bytes: 6_000 },
        prices: live_pi::NO_DISCOUNT,
        at_most: 0.35,
    },
];

/// A deterministic paragraph of about `words` words, different for each `seed`.
fn prose(seed: usize, words: usize) -> String {
    const W: [&str; 24] = [
        "ledger", "import", "amount", "retry", "account", "batch", "report", "total", "posted", "status", "check",
        "the", "and", "for", "with", "each", "row", "cents", "match", "window", "log", "failed", "warning", "next",
    ];
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    (0..words)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            W[x % W.len()]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The turn number in the newest request of `body`.
fn turn_of(body: &Value) -> usize {
    live_pi::newest_number(body, "Turn ")
}

fn script(work: Work) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |body: &Value| {
        if is_summary_request(body) {
            return Reply::Text(format!(
                "## Goal\n- {}\n\n## Progress\n- {}",
                prose(1, 60),
                prose(2, 120)
            ));
        }
        let last = body["messages"].as_array().unwrap().last().unwrap();
        let n = turn_of(body);
        match work {
            Work::Tool { bytes } if last["role"] == "user" => Reply::Tools(vec![(
                "bash".into(),
                json!({"command": format!("cat data/log-{:02}-{bytes}.log", n % 12)}),
            )]),
            // An answer as long as a model's: ~200 tokens.
            _ => Reply::Text(prose(n * 7 + 3, 150)),
        }
    }
}

fn prompt(n: usize, work: Work) -> String {
    match work {
        Work::Tool { .. } => format!("Turn {n}: look at log {:02} and tell me what failed.", n % 12),
        Work::Chat => format!("Turn {n}: {}", prose(n, 60)),
    }
}

/// Twelve logs of about `bytes` bytes each (20-40 KB for the big-output shape's 30,000).
fn write_logs(w: &World, bytes: usize) {
    for k in 0..12 {
        let size = if bytes >= 20_000 {
            20_000 + k * 20_000 / 11
        } else {
            bytes
        };
        let mut s = String::new();
        let mut i = 0;
        while s.len() < size {
            s.push_str(&live_pi::import_log_line(k, i));
            i += 1;
        }
        std::fs::write(w.project.join(format!("data/log-{k:02}-{bytes}.log")), s).unwrap();
    }
}

/// One run of a shape; `with`: the package's defaults. The bill Pi recorded and its
/// compactions.
fn run(pi: &PiBin, shape: &Shape, with: bool) -> (f64, usize) {
    let w = World::priced(shape.window, json!({}), Some(shape.prices), script(shape.work));
    if let Work::Tool { bytes } = shape.work {
        write_logs(&w, bytes);
    }
    let mut rpc = Rpc::start(w.pi(pi, with));
    for n in 1..=shape.turns {
        rpc.prompt(&prompt(n, shape.work));
    }
    rpc.quit();
    let compactions = w.entries().iter().filter(|e| e["type"] == "compaction").count();
    if std::env::var("BONSAI_BILL_PARTS").is_ok() {
        let p = w.bill_parts();
        common::say(&format!(
            "live_bill: {} with={with}: written ${:.3}, read ${:.3}, output ${:.3}, summaries ${:.3}",
            shape.name, p[0], p[1], p[2], p[3]
        ));
    }
    (w.recorded_bill(), compactions)
}

fn measure(pi: &PiBin, shape: &Shape) -> f64 {
    let (alone, ca) = run(pi, shape, false);
    let (with, cw) = run(pi, shape, true);
    let ratio = with / alone;
    common::say(&format!(
        "live_bill: Pi {}: {} ({} turns, window {}): ${with:.4} with the package against ${alone:.4} alone: {ratio:.3}x ({cw} compactions against {ca})",
        pi.version, shape.name, shape.turns, shape.window
    ));
    ratio
}

/// Every shape on every installed Pi: the package's bill within the shape's bound of Pi
/// alone's (`BONSAI_BILL_SHAPE=NAME` runs one).
#[test]
fn the_package_bills_less_on_every_shape() {
    let only = std::env::var("BONSAI_BILL_SHAPE").ok();
    for pi in live_pi::pis("tests::live_bill::the_package_bills_less_on_every_shape") {
        for shape in SHAPES.iter().filter(|s| only.as_deref().is_none_or(|o| s.name == o)) {
            let ratio = measure(&pi, shape);
            assert!(
                ratio <= shape.at_most,
                "Pi {}: {}: {ratio:.3}x Pi alone's bill (at most {})",
                pi.version,
                shape.name,
                shape.at_most
            );
        }
    }
}

/// Shapes no setting was chosen on (a 128k window with 12 KB outputs, a 32k window), for
/// BENCHMARKS.md beside the others: a check that the marks scaled with T hold elsewhere.
#[test]
#[ignore]
fn bill_shapes_unseen() {
    let unseen = [
        Shape {
            name: "a 128k window, 12 KB outputs",
            turns: 120,
            window: 128_000,
            work: Work::Tool { bytes: 12_000 },
            prices: live_pi::CACHING,
            at_most: 0.6,
        },
        Shape {
            name: "a 32k window",
            turns: 100,
            window: 32_000,
            work: Work::Tool { bytes: 4_000 },
            prices: live_pi::CACHING,
            at_most: 0.6,
        },
    ];
    for pi in live_pi::pis("tests::live_bill::bill_shapes_unseen") {
        for shape in &unseen {
            measure(&pi, shape);
        }
    }
}
