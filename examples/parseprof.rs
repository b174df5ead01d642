use std::time::Instant;
fn main() {
    let p = std::env::args().nth(1).unwrap();
    let buf = std::fs::read(&p).unwrap();
    let lines: Vec<&[u8]> = buf.split(|b| *b == b'\n').filter(|l| !l.is_empty()).collect();
    for round in 0..2 {
        let t = Instant::now();
        let mut n = 0usize;
        for l in &lines[1..] {
            let e: bonsai::engine::lenient::LEntry = serde_json::from_slice(l).unwrap();
            n += e.id.0.is_some() as usize;
        }
        let a = t.elapsed();
        let t = Instant::now();
        let mut k = 0u64;
        for l in &lines[1..] {
            let e: bonsai::engine::lenient::LEntry = serde_json::from_slice(l).unwrap();
            if let Some(m) = &e.message {
                let msg = bonsai::engine::session::Msg::from_lmessage(m, false);
                k += msg.est_tokens;
            }
        }
        let b = t.elapsed();
        let t = Instant::now();
        let s = bonsai::engine::session::Session::from_bytes(buf.clone()).unwrap();
        let c = t.elapsed();
        println!(
            "round {round}: LEntry {a:?} ({n}); +Msg {b:?} ({k}); from_bytes {c:?} ({})",
            s.entries.len()
        );
    }
}
