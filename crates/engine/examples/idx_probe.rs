use bonsai_engine::load::session::Session;
use std::time::Instant;
fn main() {
    let p = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let t = Instant::now();
    let s = Session::from_bytes(bytes.clone()).unwrap();
    println!("parse {:?} entries {}", t.elapsed(), s.entries.len());
    let t = Instant::now();
    let idx = s.to_index();
    println!("encode {:?} size {} MB", t.elapsed(), idx.len() >> 20);
    drop(s);
    for _ in 0..3 {
        let b: bonsai_engine::load::bytes::FileBytes = bytes.clone().into();
        let t = Instant::now();
        let s2 = Session::from_index(b, &idx).unwrap();
        println!("decode+index {:?} {}", t.elapsed(), s2.entries.len());
    }
    println!(
        "entry {} msg {}",
        std::mem::size_of::<bonsai_engine::load::entry::Entry>(),
        std::mem::size_of::<bonsai_engine::load::entry::StoredMessage>()
    );
}
