//! Does the model still know what the user told it? Real Pi (RPC mode) against a fake model
//! on 127.0.0.1 that answers from what it is sent: 45 prompts in a 48,000-token window, 12 KB
//! logs read again and again, specifics planted early (in the user's words and in a tool's
//! output), then 12 questions about them. Pi alone against bonsai's package.
//!
//! The fake model is the judge, and it knows nothing of bonsai: a question counts as answered
//! when the words that answer it (`Probe::needles`, all in one message) are in the request it
//! receives, or, with the package, in what one `bonsai_recall` call returns. It writes Pi's
//! compaction summaries itself, as a plain model would (each request's first sentence, the
//! files, the last answers; an update carries the previous summary), so they lose what such
//! summaries lose. Its provider caches only the previous request's start, as providers do.

mod common;

use common::fake_openai::{Reply, content_text, is_summary_request};
use common::live_pi::{self, PiBin, Rpc, World};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The window of the conversation's model (Pi's default reserve leaves T = 31,616).
const WINDOW: u64 = 48_000;

/// A question about something said earlier: the words that answer it (all in one message),
/// and what a model would ask `bonsai_recall` for.
struct Probe {
    question: &'static str,
    needles: &'static [&'static str],
    query: &'static str,
}

/// Twelve questions, then one whose answer only a tool's output held (no summary or packet
/// keeps a log's ordinary line): answered only by recall.
const PROBES: [Probe; 13] = [
    Probe {
        question: "What is the customer's account id?",
        needles: &["ACCT-77812"],
        query: "account id",
    },
    Probe {
        question: "How must amounts be stored, and what must we never use for them?",
        needles: &["Decimal", "never float"],
        query: "amounts",
    },
    Probe {
        question: "Which date format did we decide on?",
        needles: &["ISO 8601"],
        query: "dates",
    },
    Probe {
        question: "Which schema version did I ask for?",
        needles: &["schema to version 14"],
        query: "schema",
    },
    Probe {
        question: "What was the gateway error code in the logs?",
        needles: &["GW-504"],
        query: "gateway",
    },
    Probe {
        question: "Which folder must we not touch?",
        needles: &["Never touch the legacy/ folder"],
        query: "legacy",
    },
    Probe {
        question: "Where is the runbook for import stalls?",
        needles: &["https://runbooks.example.test/ledger/importer#retries"],
        query: "runbook",
    },
    Probe {
        question: "Which file did you write the report code into?",
        needles: &["src/report_writer.py"],
        query: "report",
    },
    Probe {
        question: "What should the date helper be called?",
        needles: &["parse_iso_day"],
        query: "date helper",
    },
    Probe {
        question: "Who reviews this work?",
        needles: &["Dana Okafor"],
        query: "reviewer",
    },
    Probe {
        question: "What is the batch size limit?",
        needles: &["500 rows per call"],
        query: "batch size",
    },
    Probe {
        question: "How many rows failed in day-05.log?",
        needles: &["day-05.log", "rows failed"],
        query: "day-05",
    },
    Probe {
        question: "Who made the manual override in day-02.log?",
        needles: &["manual override by Priya Raman"],
        query: "manual override",
    },
];

/// The questions of the 45 prompts (the thirteenth is asked after them).
const ASKED: usize = 12;

/// The 45 prompts: the plants among the first twelve, work that reads the logs again and
/// again, then the questions.
fn prompts() -> Vec<String> {
    let mut p: Vec<String> = vec![
        "We're fixing the ledger importer in this repo. The customer's account id is ACCT-77812; every report must carry it.".into(),
        "Read data/day-01.log and tell me how many rows failed.".into(),
        "Keep amounts as Decimal, never float.".into(),
        "Read data/day-02.log and tell me how many rows failed.".into(),
        "We decided to store dates as ISO 8601 (YYYY-MM-DD) everywhere; also bump the schema to version 14.".into(),
        "Read data/day-03.log and tell me how many rows failed.".into(),
        "Never touch the legacy/ folder; another team owns it.".into(),
        "The runbook for import stalls is https://runbooks.example.test/ledger/importer#retries when you need it.".into(),
        "Write the report code into src/report_writer.py.".into(),
        "Name the date helper parse_iso_day.".into(),
        "The reviewer is Dana Okafor; send your questions to her.".into(),
        "The batch size limit is 500 rows per call.".into(),
    ];
    // Work: the logs read again, in an order that comes back to each.
    for k in 0..21 {
        let day = [4, 5, 6, 1, 7, 8, 3, 9, 10, 2, 11, 12, 5, 6, 4, 7, 1, 8, 9, 3, 10][k];
        p.push(format!("Read data/day-{day:02}.log and tell me how many rows failed."));
    }
    for (k, q) in PROBES.iter().enumerate() {
        p.push(format!("Question {}: {}", k + 1, q.question));
    }
    assert_eq!(p.len(), 45 + PROBES.len() - ASKED);
    p
}

/// Rows that failed in a day's log (what the model answers, and what question 12 asks).
fn failed(day: usize) -> usize {
    (day * 7) % 11 + 2
}

/// Twelve logs of ~12 KB: INFO and WARN lines; day 3 holds the gateway error once.
fn write_logs(w: &World) {
    for day in 1..=12usize {
        let mut s = String::new();
        for i in 0..150usize {
            let level = if (i + day) % 9 == 0 { "WARN " } else { "INFO " };
            s.push_str(&format!(
                "2026-05-{day:02}T10:{:02}:{:02}Z {level} import.row={} account=acct-{:04} amount={}.{:02} status=posted\n",
                i % 60,
                (i * 7) % 60,
                i * 13 + day,
                (i * 31 + day) % 9000,
                (i * 37 + day * 11) % 5000,
                i % 100
            ));
            if day == 3 && i == 77 {
                s.push_str("2026-05-03T10:02:23Z ERROR import.batch=77 gateway timeout after 30s (code GW-504)\n");
            }
            if day == 2 && i == 101 {
                s.push_str(
                    "2026-05-02T10:41:07Z WARN  import.row=1042 amount corrected: manual override by Priya Raman\n",
                );
            }
        }
        std::fs::write(w.project.join(format!("data/day-{day:02}.log")), s).unwrap();
    }
}

/// How a question was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    FromRequest,
    ByRecall,
    Not,
}

/// The messages of a request as text, each whole (an OpenAI request).
fn texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let mut t = content_text(&m["content"]);
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                t.push_str(c["function"]["arguments"].as_str().unwrap_or(""));
            }
            t
        })
        .collect()
}

fn holds(texts: &[String], needles: &[&str]) -> bool {
    texts.iter().any(|t| needles.iter().all(|n| t.contains(n)))
}

/// A compaction summary as a plain model writes one from Pi's request: the first sentence of
/// each user request (at most 80 characters), the files the tools touched, the last three
/// answers' first sentences; an update keeps the previous summary's lines.
fn fake_summary(body: &Value) -> String {
    let req = texts(body).join("\n");
    let mut goal = Vec::new();
    let mut files = Vec::new();
    let mut answers = Vec::new();
    let mut previous = Vec::new();
    let mut in_prev = false;
    for line in req.lines() {
        if line.starts_with("<previous-summary>") {
            in_prev = true;
            continue;
        }
        if line.starts_with("</previous-summary>") {
            in_prev = false;
            continue;
        }
        if in_prev {
            if line.starts_with("- ") && !previous.contains(&line.to_string()) {
                previous.push(line.to_string());
            }
            continue;
        }
        if let Some(u) = line.strip_prefix("[User]: ") {
            let first = u.split(". ").next().unwrap_or(u);
            let first: String = first.chars().take(80).collect();
            goal.push(format!("- {first}"));
        } else if let Some(a) = line.strip_prefix("[Assistant]: ") {
            answers.push(format!("- {}", a.split(". ").next().unwrap_or(a)));
        } else if line.starts_with("[Assistant tool calls]: ") {
            for word in line.split(['"', ' ', '(', ')', ',', '=']) {
                if (word.starts_with("data/") || word.starts_with("src/")) && !files.contains(&word.to_string()) {
                    files.push(word.to_string());
                }
            }
        }
    }
    let keep = answers.len().saturating_sub(3);
    // A model keeps a summary to a page: the newest forty lines of goal.
    let lines: Vec<&String> = previous.iter().chain(&goal).collect();
    let from = lines.len().saturating_sub(40);
    let mut out = String::from("## Goal\n");
    for l in &lines[from..] {
        out.push_str(l);
        out.push('\n');
    }
    out.push_str("\n## Progress\n");
    for a in &answers[keep..] {
        out.push_str(a);
        out.push('\n');
    }
    out.push_str("\n## Files\n");
    for f in &files {
        out.push_str(&format!("- {f}\n"));
    }
    out
}

/// An answer about a day's log, as long as a model's (~150 tokens).
fn log_answer(day: usize) -> String {
    format!(
        "data/day-{day:02}.log: {} rows failed, all of them with status=posted but no ledger line; the warnings are retries that went through. \
I compared the amounts with the ledger totals and they match to the cent for every account in the file, so nothing else needs fixing for that day. \
The failures cluster between 10:20 and 10:40, when the gateway was slow; retrying them in one batch should post them. \
I did not change any file while checking this log; the importer code is as it was, and the report writer is untouched.",
        failed(day)
    )
}

/// One conversation's results.
struct Run {
    world: World,
    answers: BTreeMap<usize, Answer>,
    bill: f64,
    compactions: usize,
    recall_calls: usize,
}

/// The fake model of the conversation: scripted work, judged answers, plain summaries.
fn script(answers: Arc<Mutex<BTreeMap<usize, Answer>>>) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |body: &Value| {
        if is_summary_request(body) {
            return Reply::Text(fake_summary(body));
        }
        let msgs = body["messages"].as_array().unwrap();
        let all = texts(body);
        let last = msgs.last().unwrap();
        // The newest request of the user (not the packet, not a summary).
        let prompts = prompts();
        let (k, request) = msgs
            .iter()
            .enumerate()
            .rev()
            .find(|(_, m)| m["role"] == "user" && prompts.contains(&content_text(&m["content"])))
            .map(|(k, m)| (k, content_text(&m["content"])))
            .unwrap_or((0, String::new()));
        let can_recall = body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["function"]["name"] == "bonsai_recall");
        if let Some(rest) = request.strip_prefix("Question ") {
            let n: usize = rest.split(':').next().unwrap().parse().unwrap();
            let p = &PROBES[n - 1];
            // What was sent before the question.
            let before: Vec<String> = all[..k].to_vec();
            if last["role"] == "user" {
                if holds(&before, p.needles) {
                    answers.lock().unwrap().insert(n, Answer::FromRequest);
                    return Reply::Text(format!("Answer {n}: {}", p.needles.join(" … ")));
                }
                if can_recall {
                    return Reply::Tools(vec![("bonsai_recall".into(), json!({"query": p.query}))]);
                }
                answers.lock().unwrap().insert(n, Answer::Not);
                return Reply::Text(format!("Answer {n}: I do not know any more."));
            }
            // The recall's result came back.
            let got = content_text(&last["content"]);
            let a = if holds(&[got], p.needles) {
                Answer::ByRecall
            } else {
                Answer::Not
            };
            answers.lock().unwrap().insert(n, a);
            return Reply::Text(format!("Answer {n}: {:?}", a));
        }
        if last["role"] == "user" {
            if let Some(day) = request
                .strip_prefix("Read data/day-")
                .and_then(|r| r.get(..2))
                .and_then(|d| d.parse::<usize>().ok())
            {
                return Reply::Tools(vec![("read".into(), json!({"path": format!("data/day-{day:02}.log")}))]);
            }
            if request.starts_with("Write the report code") {
                return Reply::Tools(vec![(
                    "write".into(),
                    json!({"path": "src/report_writer.py", "content": "from decimal import Decimal\n\ndef write_report(rows, account):\n    return [(account, Decimal(r.amount)) for r in rows]\n"}),
                )]);
            }
            return Reply::Text(
                "Understood. I will keep that in mind for the rest of the work on the importer and check each change against it before I report back to you.".into(),
            );
        }
        // After a tool: the answer about what it read or wrote.
        match request
            .strip_prefix("Read data/day-")
            .and_then(|r| r.get(..2))
            .and_then(|d| d.parse::<usize>().ok())
        {
            Some(day) => Reply::Text(log_answer(day)),
            None => Reply::Text(
                "Done: src/report_writer.py writes each row with the account id and its amount as a Decimal.".into(),
            ),
        }
    }
}

/// The 45 prompts in RPC mode; `settings`: Pi's settings.json (`None`: Pi alone).
fn converse(pi: &PiBin, settings: Option<Value>) -> Run {
    let answers = Arc::new(Mutex::new(BTreeMap::new()));
    let with = settings.is_some();
    let w = World::priced(
        WINDOW,
        settings.unwrap_or(json!({})),
        Some(live_pi::CACHING),
        script(answers.clone()),
    );
    write_logs(&w);
    std::fs::create_dir_all(w.project.join("src")).unwrap();
    let mut rpc = Rpc::start(w.pi(pi, with));
    let mut bill = 0.0;
    for (k, p) in prompts().iter().enumerate() {
        if k == 45 {
            bill = w.recorded_bill();
        }
        rpc.prompt(p);
    }
    rpc.quit();
    let answers = answers.lock().unwrap().clone();
    let recall_calls = w
        .entries()
        .iter()
        .filter(|e| e["message"]["role"] == "assistant")
        .flat_map(|e| e["message"]["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "toolCall" && b["name"] == "bonsai_recall")
        .count();
    Run {
        bill,
        compactions: w.entries().iter().filter(|e| e["type"] == "compaction").count(),
        answers,
        recall_calls,
        world: w,
    }
}

/// Of the twelve questions of the 45 prompts.
fn answered(r: &Run) -> usize {
    r.answers.range(1..=ASKED).filter(|(_, a)| **a != Answer::Not).count()
}

/// The bill's parts as Pi recorded them: replies' input written, input read from the cache,
/// output, and the summary calls.
fn parts(r: &Run) -> String {
    let p = r.world.bill_parts();
    format!(
        "written ${:.3}, read ${:.3}, output ${:.3}, summaries ${:.3}",
        p[0], p[1], p[2], p[3]
    )
}

fn describe(r: &Run) -> String {
    let lost: Vec<usize> = r
        .answers
        .range(1..=ASKED)
        .filter(|(_, a)| **a == Answer::Not)
        .map(|(k, _)| *k)
        .collect();
    format!(
        "{}/12 answered ({} from the request, {} by recall; not: {lost:?}), ${:.4} ({}), {} compactions, {} recall calls",
        answered(r),
        r.answers
            .range(1..=ASKED)
            .filter(|(_, a)| **a == Answer::FromRequest)
            .count(),
        r.answers
            .range(1..=ASKED)
            .filter(|(_, a)| **a == Answer::ByRecall)
            .count(),
        r.bill,
        parts(r),
        r.compactions,
        r.recall_calls
    )
}

/// The 45 prompts with Pi alone and with the package's defaults: with the package every
/// question is answered (from the request, or by one `bonsai_recall` call each), no fewer
/// than Pi alone, for at most 0.7× Pi alone's bill. The bill is of the 45 prompts; a
/// thirteenth question after them, about a line only a log's output held, is answered by a
/// `bonsai_recall` call the model makes in real Pi (Pi alone cannot).
#[test]
fn the_model_with_bonsai_answers_every_question_for_less() {
    for pi in live_pi::pis("tests::live_recall::the_model_with_bonsai_answers_every_question_for_less") {
        let alone = converse(&pi, None);
        let with = converse(&pi, Some(json!({})));
        assert_eq!(
            alone.answers.get(&13),
            Some(&Answer::Not),
            "Pi {}: Pi alone has no recall",
            pi.version
        );
        assert_eq!(
            with.answers.get(&13),
            Some(&Answer::ByRecall),
            "Pi {}: the model's bonsai_recall call got the log's line back",
            pi.version
        );
        common::say(&format!(
            "live_recall: Pi {}: Pi alone: {}",
            pi.version,
            describe(&alone)
        ));
        common::say(&format!(
            "live_recall: Pi {}: with bonsai: {}",
            pi.version,
            describe(&with)
        ));
        assert_eq!(
            with.answers.len(),
            PROBES.len(),
            "Pi {}: every question reached the model",
            pi.version
        );
        assert_eq!(answered(&with), 12, "Pi {}: {}", pi.version, describe(&with));
        assert!(answered(&with) >= answered(&alone));
        assert!(
            with.recall_calls <= 12,
            "Pi {}: one recall call a question at most",
            pi.version
        );
        let ratio = with.bill / alone.bill;
        assert!(ratio <= 0.7, "Pi {}: {ratio:.3} × Pi alone's bill", pi.version);
        common::say(&format!("live_recall: Pi {}: bill {ratio:.3} × Pi alone's", pi.version));
        // `bonsai bill`'s facts kept: of the specifics the replies used again, those the
        // request held, or recall could reach. Pi alone's session replayed as Pi alone, the
        // package's as the package.
        let facts = |w: &World, policy: &str| -> (u64, u64, u64) {
            let o = w
                .bonsai()
                .args(["bill", "--json", "--policy", policy])
                .arg(&w.session)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let b: Value = serde_json::from_slice(&o.stdout).unwrap();
            let f = &b["sessions"][0]["policies"][0]["factsKept"];
            (
                f["used"].as_u64().unwrap(),
                f["sent"].as_u64().unwrap(),
                f["reachable"].as_u64().unwrap(),
            )
        };
        let (au, asent, _) = facts(&alone.world, "off");
        let (wu, wsent, wreach) = facts(&with.world, "zones");
        common::say(&format!(
            "live_recall: Pi {}: facts kept (bonsai bill): Pi alone {asent} of {au} sent; with bonsai {wsent} of {wu} sent, {wreach} within recall",
            pi.version
        ));
        assert!(
            wreach * au >= asent * wu,
            "Pi {}: fewer facts within reach than Pi alone had",
            pi.version
        );
        // Each policy beside them: `off` answers as Pi alone does (it is Pi alone).
        for (name, settings) in [
            ("off", json!({"bonsai": {"live": {"policy": "off"}}})),
            ("output", json!({"bonsai": {"live": {"policy": "output"}}})),
            (
                "zones, compactEarly",
                json!({"bonsai": {"live": {"compactEarly": true}}}),
            ),
            ("zones, no mend", json!({"bonsai": {"live": {"mend": false}}})),
        ] {
            let r = converse(&pi, Some(settings));
            common::say(&format!(
                "live_recall: Pi {}: {name}: {} ({:.3}x)",
                pi.version,
                describe(&r),
                r.bill / alone.bill
            ));
            if name == "off" {
                assert_eq!(answered(&r), answered(&alone), "Pi {}: off is Pi alone", pi.version);
                assert!(
                    (r.bill / alone.bill - 1.0).abs() <= 0.01,
                    "Pi {}: off bills as Pi alone",
                    pi.version
                );
            }
        }
    }
}

/// What the user planted in the first turns of a long session, checked as plain text in each
/// request.
const PLANTED: [&str; 5] = [
    "ACCT-77812",
    "Never touch the legacy/ folder; another team owns it.",
    "https://runbooks.example.test/ledger/importer#retries",
    "ERROR 2026-05-03T10:02:23Z import.batch=77 gateway timeout after 30s (code GW-504)",
    "src/report_writer.py",
];

/// Turn `n` (from 1) of the long session: five turns that plant, then checks of the logs.
fn long_prompt(n: usize) -> String {
    match n {
        1 => "Let's fix the ledger importer. The customer's account id is ACCT-77812; every report must carry it.".into(),
        2 => "Never touch the legacy/ folder; another team owns it.".into(),
        3 => "If imports stall, read the runbook. It is at https://runbooks.example.test/ledger/importer#retries for later.".into(),
        4 => "Run the import once and show me its log.".into(),
        5 => "Write the report code into src/report_writer.py.".into(),
        n => format!("Step {n}: check data/part-{:02}.log for warnings and say what you decide.", n % 12),
    }
}

/// The fake model of the long session: each turn a tool call and an answer of ~120 tokens.
fn long_script(body: &Value) -> Reply {
    if is_summary_request(body) {
        return Reply::Text(fake_summary(body));
    }
    let msgs = body["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    let request = msgs
        .iter()
        .rev()
        .map(|m| content_text(&m["content"]))
        .find(|t| {
            t.starts_with("Step ")
                || t.starts_with("Let's")
                || t.starts_with("Never")
                || t.starts_with("If imports")
                || t.starts_with("Run the")
                || t.starts_with("Write the")
        })
        .unwrap_or_default();
    if last["role"] == "user" {
        if request.starts_with("Run the import") {
            return Reply::Tools(vec![("bash".into(), json!({"command": "cat data/import-run.log"}))]);
        }
        if request.starts_with("Write the report") {
            return Reply::Tools(vec![(
                "write".into(),
                json!({"path": "src/report_writer.py", "content": "def write_report(rows, account):\n    return [(account, r) for r in rows]\n"}),
            )]);
        }
        if let Some(n) = request
            .strip_prefix("Step ")
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse::<usize>().ok())
        {
            return Reply::Tools(vec![(
                "bash".into(),
                json!({"command": format!("cat data/part-{:02}.log", n % 12)}),
            )]);
        }
        return Reply::Text("Understood; I will hold to that for the rest of the work.".into());
    }
    Reply::Text(format!(
        "{} The warnings are retries that went through and the amounts match the ledger to the cent, so nothing needs fixing there. \
I changed no file while checking; the importer and the report writer are as they were, and the next log is the one to look at.",
        request.split(':').next().unwrap_or("Done")
    ))
}

/// Twelve logs of ~6 KB, and the import run's log with its one error line.
fn write_long_logs(w: &World) {
    live_pi::write_part_logs(w);
    let mut run = String::from("2026-05-03T10:00:00Z INFO  import started\n");
    for i in 0..60 {
        run.push_str(&format!(
            "2026-05-03T10:01:{:02}Z INFO  import.batch={i} posted\n",
            i % 60
        ));
    }
    run.push_str(PLANTED[3]);
    run.push_str("\n2026-05-03T10:02:30Z INFO  import.batch=77 retried and posted\n");
    std::fs::write(w.project.join("data/import-run.log"), run).unwrap();
    std::fs::create_dir_all(w.project.join("src")).unwrap();
}

/// The packets of a request, as text.
fn packets_of(body: &Value) -> Vec<String> {
    texts(body).into_iter().filter(|t| t.starts_with("[bonsai: ")).collect()
}

/// 400 turns in a 64,000-token window (compactions every ~25 turns): the specifics planted in
/// the first five turns (an id, a constraint, a URL, an error line inside a log's output, a
/// file the model wrote) are in the request word for word at turns 30, 60, 120, 200, 300 and
/// 400, across every compaction (each mended), and the packet is at most 1,200 tokens at every
/// call, with the defaults and with `compactEarly`.
#[test]
fn planted_specifics_stay_word_for_word_over_400_turns() {
    for pi in live_pi::pis("tests::live_recall::planted_specifics_stay_word_for_word_over_400_turns") {
        for settings in [json!({}), json!({"bonsai": {"live": {"compactEarly": true}}})] {
            let what = format!("Pi {} {settings}", pi.version);
            let w = World::priced(64_000, settings.clone(), Some(live_pi::CACHING), long_script);
            write_long_logs(&w);
            let mut rpc = Rpc::start(w.pi(&pi, true));
            let mut checked = 0;
            for n in 1..=400 {
                let before = w.server.requests().len();
                rpc.prompt(&long_prompt(n));
                if [30, 60, 120, 200, 300, 400].contains(&n) {
                    let first = w.server.requests()[before..]
                        .iter()
                        .find(|b| !is_summary_request(b))
                        .cloned()
                        .unwrap();
                    let sent = texts(&first);
                    for p in PLANTED {
                        assert!(
                            sent.iter().any(|t| t.contains(p)),
                            "{what}: turn {n}: {p:?} is not in the request:\n{}",
                            sent.iter()
                                .filter(|t| t.len() > 200 && !t.starts_with("20"))
                                .cloned()
                                .collect::<Vec<_>>()
                                .join("\n-----\n")
                        );
                    }
                    checked += 1;
                }
            }
            rpc.quit();
            let reqs: Vec<Value> = w.chat_requests();
            let most = reqs
                .iter()
                .flat_map(packets_of)
                .map(|p| p.chars().count().div_ceil(4))
                .max()
                .unwrap_or(0);
            let compactions = w.entries().iter().filter(|e| e["type"] == "compaction").count();
            common::say(&format!(
                "live_recall: {what}: 400 turns, {compactions} compactions, the largest packet {most} tokens, planted specifics at {checked} checkpoints"
            ));
            assert!(most > 0 && most <= 1_200, "{what}: a packet of {most} tokens");
            assert!(compactions >= 8, "{what}: {compactions} compactions");
        }
    }
}

/// Pi's requests with the package's `off` policy are Pi alone's, byte for byte: the same
/// messages and tools, the same compactions, and a bill within 1 % (200 turns, Pi compacting
/// at its threshold in a 64,000-token window).
#[test]
fn off_is_pi_alone_over_200_turns() {
    for pi in live_pi::pis("tests::live_recall::off_is_pi_alone_over_200_turns") {
        let run = |settings: Option<Value>| {
            let with = settings.is_some();
            let w = World::priced(
                64_000,
                settings.unwrap_or(json!({})),
                Some(live_pi::CACHING),
                long_script,
            );
            write_long_logs(&w);
            let mut rpc = Rpc::start(w.pi(&pi, with));
            for n in 1..=200 {
                rpc.prompt(&long_prompt(n));
            }
            rpc.quit();
            w
        };
        let alone = run(None);
        let off = run(Some(json!({"bonsai": {"live": {"policy": "off"}}})));
        // Each world has its own folders (Pi's system prompt names the cwd): compared with
        // them named the same.
        let strip = |w: &World, b: &Value| -> String {
            json!({"tools": b["tools"], "messages": b["messages"]})
                .to_string()
                .replace(&w.dir.path().display().to_string(), "<world>")
        };
        let (a, o) = (alone.server.requests(), off.server.requests());
        assert_eq!(a.len(), o.len(), "Pi {}: the same number of requests", pi.version);
        for (k, (x, y)) in a.iter().zip(&o).enumerate() {
            let (x, y) = (strip(&alone, x), strip(&off, y));
            if x != y {
                let at = x.bytes().zip(y.bytes()).take_while(|(p, q)| p == q).count();
                panic!(
                    "Pi {}: request {k} differs at byte {at}: {:?} / {:?}",
                    pi.version,
                    &x[at.saturating_sub(80)..(at + 80).min(x.len())],
                    &y[at.saturating_sub(80)..(at + 80).min(y.len())]
                );
            }
        }
        let count = |w: &World| w.entries().iter().filter(|e| e["type"] == "compaction").count();
        assert_eq!(count(&alone), count(&off), "Pi {}: the same compactions", pi.version);
        assert!(
            count(&alone) >= 3,
            "Pi {}: Pi compacted {} times",
            pi.version,
            count(&alone)
        );
        let ratio = off.recorded_bill() / alone.recorded_bill();
        common::say(&format!(
            "live_recall: Pi {}: off over 200 turns: {} compactions each, bill {ratio:.4} × Pi alone's",
            pi.version,
            count(&off)
        ));
        assert!((ratio - 1.0).abs() <= 0.01, "Pi {}: {ratio:.4}", pi.version);
    }
}
