//! The recorded-exchange check shared by the protocol test and every live test that runs
//! bonsai's package: each request the package sent reads as `bonsai::serve::protocol`'s
//! types with no field they do not name, and each reply is exactly what the answer types
//! write.

use bonsai::serve::protocol::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::Path;

/// The error codes a reply may carry.
pub const CODES: [&str; 6] = [
    "bad-request",
    "unknown-method",
    "protocol",
    "resync",
    "failed",
    "internal",
];

/// Keys of `recorded` that `typed` lacks, as paths (`params.usage.tokenz`).
fn unnamed(recorded: &Value, typed: &Value, at: &str, out: &mut Vec<String>) {
    match (recorded, typed) {
        (Value::Object(r), Value::Object(t)) => {
            for (k, v) in r {
                match t.get(k) {
                    Some(tv) => unnamed(v, tv, &format!("{at}.{k}"), out),
                    None => out.push(format!("{at}.{k}")),
                }
            }
        }
        (Value::Array(r), Value::Array(t)) => {
            for (k, (a, b)) in r.iter().zip(t).enumerate() {
                unnamed(a, b, &format!("{at}[{k}]"), out);
            }
        }
        _ => {}
    }
}

/// The reply's result read as `T` and written again: the same JSON, or what differs.
fn round_trip<T: DeserializeOwned + Serialize>(method: &str, result: &Value) -> Result<(), String> {
    let typed: T = serde_json::from_value(result.clone()).map_err(|e| format!("{method} reply: {e}: {result}"))?;
    let again = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    if &again != result {
        let mut missing = Vec::new();
        unnamed(result, &again, "result", &mut missing);
        return Err(format!(
            "{method} reply is not what its type writes (fields the type lacks: {missing:?}):\n  recorded {result}\n  typed    {again}"
        ));
    }
    Ok(())
}

/// One recorded exchange, `{"request": …, "reply": …}`: what is wrong with it, if anything.
/// Returns its method.
pub fn check_exchange(x: &Value) -> Result<String, String> {
    let req = &x["request"];
    let method = req["method"]
        .as_str()
        .ok_or_else(|| format!("no method: {req}"))?
        .to_string();
    let params = req.get("params").map(|p| p.to_string());
    let parsed = Request::parse(&method, params.as_deref()).map_err(|Fail(c, m)| format!("{c}: {m}"))?;
    let typed = serde_json::to_value(&parsed).map_err(|e| e.to_string())?;
    let mut extra = Vec::new();
    unnamed(
        req.get("params").unwrap_or(&Value::Null),
        &typed["params"],
        "params",
        &mut extra,
    );
    if !extra.is_empty() {
        return Err(format!(
            "{method}: the package sends fields the protocol does not name: {extra:?}"
        ));
    }
    let reply = &x["reply"];
    if reply["id"] != req["id"] {
        return Err(format!(
            "{method}: reply id {} for request id {}",
            reply["id"], req["id"]
        ));
    }
    if let Some(e) = reply.get("error") {
        let code = e["code"].as_str().unwrap_or("");
        return if CODES.contains(&code) && e["message"].is_string() {
            Ok(method)
        } else {
            Err(format!("{method}: error reply {e}"))
        };
    }
    let r = &reply["result"];
    match method.as_str() {
        "hello" => round_trip::<HelloAnswer>(&method, r),
        "context" => round_trip::<ContextAnswer>(&method, r),
        "turn_end" => round_trip::<TurnEndAnswer>(&method, r),
        "compaction_done" => round_trip::<CompactionDoneAnswer>(&method, r),
        "summarize" => round_trip::<SummarizeAnswer>(&method, r),
        "audit" => round_trip::<AuditAnswer>(&method, r),
        "mend" => round_trip::<MendAnswer>(&method, r),
        "recall" => round_trip::<RecallAnswer>(&method, r),
        "status" => round_trip::<StatusAnswer>(&method, r),
        "shutdown" => round_trip::<ShutdownAnswer>(&method, r),
        other => Err(format!("unknown method {other}")),
    }?;
    Ok(method)
}

/// Every exchange of a recording (one JSON line each): the problems found, and the methods seen.
pub fn check_recording(path: &Path) -> (Vec<String>, std::collections::BTreeSet<String>) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut problems = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (k, line) in text.lines().enumerate() {
        let x: Value = match serde_json::from_str(line) {
            Ok(x) => x,
            Err(e) => {
                problems.push(format!("line {}: {e}", k + 1));
                continue;
            }
        };
        match check_exchange(&x) {
            Ok(m) => {
                seen.insert(m);
            }
            Err(e) => problems.push(format!("line {}: {e}", k + 1)),
        }
    }
    (problems, seen)
}
