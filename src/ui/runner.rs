//! The job runner: one trait for every job, and a runner that knows no job.
//!
//! - A job is a struct with its own typed output (`Job::Output`): its progress and its end
//!   in one type of its own, so nobody takes a shared enum apart again.
//! - Whoever queues a job says how its output comes back, so results go straight to their
//!   handler, with no table of every result in between: a part of the root that owns the
//!   job answers it (`Answers<J>`, reached through `Reaches<C>`) and the root carries out
//!   what it answers; a root that handles it itself receives it (`Receives<J>`).
//! - The runner is generic: it starts a job on a worker, carries each output back as a
//!   `Done`, and counts the jobs that write files so a quit can wait for them. Priority and
//!   cancelling belong to the jobs (a low-priority pool, a cancel flag in the job).
//!
//! Modelled on gitui's `AsyncJob`: one trait, a struct per job.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A piece of slow work, run on a worker off the key path.
pub trait Job: Send + 'static {
    /// What the job reports: progress while it runs, then its end.
    type Output: Send + 'static;
    /// The job's name, for the log and for tests.
    const NAME: &'static str;
    /// A quit waits for jobs that write files.
    /// A cut write would otherwise leave a temp file or an unfinished rename.
    const WRITES_FILES: bool = false;
    /// Only the newest request counts (the view of the current selection): while one runs,
    /// a newer one waits in a single slot that the next overwrites (gitui's
    /// `AsyncSingleJob`). Holding a key then costs what its last press needs.
    const LATEST_WINS: bool = false;
    /// Do the work, saying progress through `report`; the returned value is the last output.
    fn run(self, report: Report<Self::Output>) -> Self::Output;
}

/// How a receiver takes a job's output: the job's handler, named once per job.
pub trait Receives<J: Job> {
    fn receive(&mut self, output: J::Output);
}

/// A part of the root that owns a job: it takes the job's outputs itself and answers what
/// else should happen (gitui's components, each with its own `AsyncJob`).
pub trait Answers<J: Job> {
    /// What the part answers, for the root to carry out.
    type Effects;
    fn answer(&mut self, output: J::Output) -> Self::Effects;
}

/// How the root reaches its part `C`: `None` when the part is gone (its overlay closed),
/// and the output is then dropped.
pub trait Reaches<C> {
    fn part(&mut self) -> Option<&mut C>;
}

/// How the root carries out what a part answers.
pub trait CarriesOut<E> {
    fn carry_out(&mut self, effects: E);
}

/// How a job's output reaches its handler in the root `R`.
type Deliver<R> = fn(&mut R, Box<dyn Any + Send>);

/// How a queued job runs: the job, its session, where its outputs go and to whom.
type Run<R> = fn(Box<dyn Any + Send>, Option<DocToken>, Sink<R>, Deliver<R>);

/// Where a running job says its progress, and asks whether its document was left.
pub struct Report<O>(Arc<dyn Fn(O) + Send + Sync>, Option<DocToken>);

impl<O> Clone for Report<O> {
    fn clone(&self) -> Self {
        Report(self.0.clone(), self.1.clone())
    }
}

impl<O: 'static> Report<O> {
    pub fn new(f: impl Fn(O) + Send + Sync + 'static) -> Self {
        Report(Arc::new(f), None)
    }

    /// A report nobody reads.
    pub fn nowhere() -> Self {
        Report(Arc::new(|_| {}), None)
    }

    pub fn say(&self, output: O) {
        (self.0)(output)
    }

    /// The session the job was queued for is no longer shown: its result will be dropped,
    /// so a long job stops at its next check.
    pub fn left(&self) -> bool {
        self.1.as_ref().is_some_and(DocToken::is_left)
    }
}

/// The document (one open session) a job was queued for.
/// - Made by the runner, unique in the process: a new `App` never starts its count again,
///   so a result of the session left behind cannot pass for the new one's.
/// - Kept across reloads of the same file; a new one for each session opened.
/// - Its flag is set when the session is left: its queued jobs do not start, running ones
///   that check [`Report::left`] stop.
#[derive(Clone)]
pub struct DocToken(Arc<(u64, std::sync::atomic::AtomicBool)>);

impl DocToken {
    pub fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        DocToken(Arc::new((
            NEXT.fetch_add(1, Ordering::Relaxed),
            std::sync::atomic::AtomicBool::new(false),
        )))
    }

    /// The session is no longer shown.
    pub fn leave(&self) {
        self.0.1.store(true, Ordering::Relaxed);
    }

    pub fn is_left(&self) -> bool {
        self.0.1.load(Ordering::Relaxed)
    }

    pub fn id(&self) -> u64 {
        self.0.0
    }
}

impl Default for DocToken {
    fn default() -> Self {
        DocToken::new()
    }
}

impl std::fmt::Debug for DocToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "document {}{}",
            self.id(),
            if self.is_left() { " (left)" } else { "" }
        )
    }
}

/// What carries finished outputs back to the receiver's loop.
type Sink<R> = Arc<dyn Fn(Done<R>) + Send + Sync>;

/// A job queued for receiver `R`: the job itself (tests look into it) and how to run it.
pub struct Queued<R> {
    job: Box<dyn Any + Send>,
    name: &'static str,
    writes_files: bool,
    latest_wins: bool,
    /// The session it was queued for (stamped when the app hands its jobs over).
    doc: Option<DocToken>,
    run: Run<R>,
    deliver: Deliver<R>,
}

impl<R: 'static> Queued<R> {
    /// A job whose outputs the root receives itself.
    pub fn new<J: Job>(job: J) -> Self
    where
        R: Receives<J>,
    {
        Queued::with(job, deliver::<J, R>)
    }

    /// A job whose outputs go to the root's part `C`, which owns it.
    pub fn to<J: Job, C>(job: J) -> Self
    where
        C: Answers<J>,
        R: Reaches<C> + CarriesOut<C::Effects>,
    {
        Queued::with(job, deliver_to::<J, C, R>)
    }

    fn with<J: Job>(job: J, deliver: Deliver<R>) -> Self {
        Queued {
            job: Box::new(job),
            name: J::NAME,
            writes_files: J::WRITES_FILES,
            latest_wins: J::LATEST_WINS,
            doc: None,
            run: run_erased::<J, R>,
            deliver,
        }
    }
}

impl<R> Queued<R> {
    /// The job, if it is a `J`.
    pub fn job<J: Job>(&self) -> Option<&J> {
        self.job.downcast_ref()
    }

    pub fn job_mut<J: Job>(&mut self) -> Option<&mut J> {
        self.job.downcast_mut()
    }

    pub fn is<J: Job>(&self) -> bool {
        self.job.is::<J>()
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Bound to `doc` unless it was bound already.
    pub fn for_doc(mut self, doc: &DocToken) -> Self {
        self.doc.get_or_insert_with(|| doc.clone());
        self
    }

    pub fn doc(&self) -> Option<&DocToken> {
        self.doc.as_ref()
    }
}

impl<R> std::fmt::Debug for Queued<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// One output of a job, on its way back to the receiver.
pub struct Done<R> {
    output: Box<dyn Any + Send>,
    name: &'static str,
    deliver: fn(&mut R, Box<dyn Any + Send>),
    /// The session the job was queued for.
    doc: Option<DocToken>,
    /// The job's last output (its end, not progress).
    last: bool,
}

impl<R> Done<R> {
    fn of<J: Job>(output: J::Output, doc: Option<DocToken>, last: bool, deliver: Deliver<R>) -> Self {
        Done {
            output: Box::new(output),
            name: J::NAME,
            deliver,
            doc,
            last,
        }
    }

    /// The end of a job that said nothing (it did not run, or it panicked): it frees the
    /// job's latest-wins slot and delivers nothing.
    fn ended(name: &'static str, doc: Option<DocToken>) -> Self {
        fn nothing<R>(_: &mut R, _: Box<dyn Any + Send>) {}
        Done {
            output: Box::new(()),
            name,
            deliver: nothing::<R>,
            doc,
            last: true,
        }
    }

    /// Whether it was queued for `doc` (or for no session in particular).
    pub fn is_for(&self, doc: &DocToken) -> bool {
        self.doc.as_ref().is_none_or(|d| d.id() == doc.id())
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Hand the output to its handler.
    pub fn deliver(self, receiver: &mut R) {
        (self.deliver)(receiver, self.output)
    }

    /// The output, if it is a `T` (tests look at what came back).
    pub fn output<T: 'static>(&self) -> Option<&T> {
        self.output.downcast_ref()
    }
}

impl<R> std::fmt::Debug for Done<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "output of {}", self.name)
    }
}

fn deliver<J: Job, R: Receives<J>>(receiver: &mut R, output: Box<dyn Any + Send>) {
    // The box was made by `Done::of::<J>`, so it holds a `J::Output`.
    if let Ok(o) = output.downcast::<J::Output>() {
        receiver.receive(*o);
    }
}

/// Hand the part `C` of the root an output of its job `J`, and carry out its answer.
fn deliver_to<J: Job, C: Answers<J>, R: Reaches<C> + CarriesOut<C::Effects>>(
    root: &mut R,
    output: Box<dyn Any + Send>,
) {
    // The box was made by `Done::of::<J>`, so it holds a `J::Output`.
    if let Ok(o) = output.downcast::<J::Output>()
        && let Some(part) = root.part()
    {
        let effects = part.answer(*o);
        root.carry_out(effects);
    }
}

fn run_erased<J: Job, R: 'static>(job: Box<dyn Any + Send>, doc: Option<DocToken>, sink: Sink<R>, deliver: Deliver<R>) {
    // The box was made by `Queued::new::<J>`, so it holds a `J`.
    let Ok(job) = job.downcast::<J>() else { return };
    let progress = sink.clone();
    let said_for = doc.clone();
    let report = Report(
        Arc::new(move |o| progress(Done::of::<J>(o, said_for.clone(), false, deliver))),
        doc.clone(),
    );
    let last = job.run(report);
    sink(Done::of::<J>(last, doc, true, deliver));
}

/// Run a job here, every output in order (tests, benchmarks, small sessions).
pub fn run_here<J: Job>(job: J) -> Vec<J::Output> {
    let said = Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = said.clone();
    let last = job.run(Report::new(move |o| {
        if let Ok(mut v) = into.lock() {
            v.push(o);
        }
    }));
    let mut all = said.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default();
    all.push(last);
    all
}

/// Run a queued job here, every output in order, ready to be delivered.
pub fn run_now<R: 'static>(queued: Queued<R>) -> Vec<Done<R>> {
    let said = Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = said.clone();
    (queued.run)(
        queued.job,
        queued.doc,
        Arc::new(move |d| {
            if let Ok(mut v) = into.lock() {
                v.push(d);
            }
        }),
        queued.deliver,
    );
    said.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default()
}

/// How many jobs that write files are under way.
static WRITES_UNDER_WAY: AtomicUsize = AtomicUsize::new(0);

/// Counts a writing job from its start to its end, however it ends.
struct WriteUnderWay;

impl WriteUnderWay {
    fn start() -> Self {
        WRITES_UNDER_WAY.fetch_add(1, Ordering::SeqCst);
        WriteUnderWay
    }
}

impl Drop for WriteUnderWay {
    fn drop(&mut self) {
        WRITES_UNDER_WAY.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Wait, up to `limit`, until no job is writing a file; true if none is.
/// On quit, the runtime is then shut down without waiting for the rest.
/// A parse, a count or a search could take seconds on a big session.
pub fn wait_for_writes(limit: std::time::Duration) -> bool {
    let start = std::time::Instant::now();
    while WRITES_UNDER_WAY.load(Ordering::SeqCst) > 0 {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    true
}

/// Start a job on a worker of the runtime; its outputs arrive on `tx`.
/// A job that waits on the network blocks its worker on the runtime's handle.
/// A job whose session was left before a worker took it does not run (it says nothing).
pub fn spawn<R: 'static>(
    queued: Queued<R>,
    handle: &tokio::runtime::Handle,
    tx: tokio::sync::mpsc::UnboundedSender<Done<R>>,
) {
    // Counted from here, not from when a worker takes it.
    // A quit right after a key that started a write still waits for it.
    let under_way = queued.writes_files.then(WriteUnderWay::start);
    handle.spawn_blocking(move || {
        let (name, doc, latest) = (queued.name, queued.doc.clone(), queued.latest_wins);
        // A write runs whatever was left: it was asked for and may be half way.
        let runs = queued.writes_files || !queued.doc.as_ref().is_some_and(DocToken::is_left);
        let sink = tx.clone();
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if runs {
                (queued.run)(
                    queued.job,
                    queued.doc,
                    Arc::new(move |d| {
                        let _ = sink.send(d);
                    }),
                    queued.deliver,
                );
            }
        }));
        // A latest-wins job that did not run or ended in a panic still frees its slot.
        if latest && (!runs || ran.is_err()) {
            let _ = tx.send(Done::ended(name, doc));
        }
        drop(under_way);
        if let Err(panic) = ran {
            std::panic::resume_unwind(panic);
        }
    });
}

/// The event loop's runner: starts jobs, and keeps the latest-wins ones to one in flight
/// and one waiting per job and session.
pub struct Runner<R> {
    handle: tokio::runtime::Handle,
    tx: tokio::sync::mpsc::UnboundedSender<Done<R>>,
    /// (job name, session) → a newer request waiting for the one in flight, if any.
    in_flight: std::collections::HashMap<(&'static str, u64), Option<Queued<R>>>,
    /// How many jobs were started, and how many requests were overwritten unstarted.
    pub started: usize,
    pub superseded: usize,
}

impl<R: 'static> Runner<R> {
    pub fn new(handle: tokio::runtime::Handle, tx: tokio::sync::mpsc::UnboundedSender<Done<R>>) -> Self {
        Runner {
            handle,
            tx,
            in_flight: Default::default(),
            started: 0,
            superseded: 0,
        }
    }

    /// Start `queued`, or for a latest-wins job with one of its kind running, keep it as
    /// the one to run next (the request it replaces is dropped unstarted).
    pub fn start(&mut self, queued: Queued<R>) {
        if queued.latest_wins {
            let key = (queued.name, queued.doc.as_ref().map_or(0, DocToken::id));
            if let Some(waiting) = self.in_flight.get_mut(&key) {
                if waiting.replace(queued).is_some() {
                    self.superseded += 1;
                }
                return;
            }
            self.in_flight.insert(key, None);
        }
        self.started += 1;
        spawn(queued, &self.handle, self.tx.clone());
    }

    /// Start the jobs the app handed over at once. Of latest-wins jobs of one kind and
    /// session, only the last is kept: keys taken together asked for them in a row, and
    /// only the newest one's answer is wanted.
    pub fn start_all(&mut self, jobs: Vec<Queued<R>>) {
        let key = |q: &Queued<R>| (q.name, q.doc.as_ref().map_or(0, DocToken::id));
        let mut last = std::collections::HashMap::new();
        for (k, q) in jobs.iter().enumerate() {
            if q.latest_wins {
                last.insert(key(q), k);
            }
        }
        for (k, q) in jobs.into_iter().enumerate() {
            if q.latest_wins && last.get(&key(&q)) != Some(&k) {
                self.superseded += 1;
                continue;
            }
            self.start(q);
        }
    }

    /// Called with each output before it is delivered: a latest-wins job's end starts the
    /// request that waited for it.
    pub fn finished(&mut self, done: &Done<R>) {
        if !done.last {
            return;
        }
        let key = (done.name, done.doc.as_ref().map_or(0, DocToken::id));
        let Some(waiting) = self.in_flight.remove(&key) else {
            return;
        };
        if let Some(next) = waiting {
            self.start(next);
        }
    }
}

/// Run a future to its end from a job's worker: on the runtime when there is one, else on a
/// runtime of its own (tests run jobs without one).
pub fn block_on<F: std::future::Future>(work: F) -> Result<F::Output, std::io::Error> {
    match tokio::runtime::Handle::try_current() {
        Ok(h) => Ok(h.block_on(work)),
        Err(_) => Ok(tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(work)),
    }
}

/// Run `work` on the low-priority pool, or here when it cannot be made.
pub fn at_low_priority<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    match low_priority_pool() {
        Some(p) => p.install(work),
        None => work(),
    }
}

/// Threads of low priority for counting nobody waits on: the selection's exact tokens and
/// every entry's.
/// Neither a key press nor the terminal drawing the frame waits on them.
/// After a 1 GB session's first frame, its path's 86,000 messages kept both cores busy for
/// seconds.
/// `None` if the threads cannot be made: the caller counts where it is.
pub fn low_priority_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
            .thread_name(|k| format!("bonsai-count-{k}"))
            .start_handler(|_| {
                // SAFETY: setpriority on this thread (0 = the calling thread on Linux) only
                // lowers its scheduling priority.
                unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, 0, 10);
                }
            })
            .build()
            .ok()
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Count(u32);

    impl Job for Count {
        type Output = u32;
        const NAME: &'static str = "count";
        fn run(self, report: Report<u32>) -> u32 {
            for k in 0..self.0 {
                report.say(k);
            }
            self.0
        }
    }

    #[derive(Default)]
    struct Heard(Vec<u32>);

    impl Receives<Count> for Heard {
        fn receive(&mut self, n: u32) {
            self.0.push(n);
        }
    }

    #[test]
    fn a_job_s_outputs_reach_its_receiver_in_order() {
        let q = Queued::<Heard>::new(Count(3));
        assert!(q.is::<Count>());
        assert_eq!(q.job::<Count>().map(|c| c.0), Some(3));
        let mut heard = Heard::default();
        for d in run_now(q) {
            assert_eq!(format!("{d:?}"), "output of count");
            d.deliver(&mut heard);
        }
        assert_eq!(heard.0, [0, 1, 2, 3]);
        assert_eq!(run_here(Count(2)), [0, 1, 2]);
    }

    /// A root with a part that owns `Count` (gitui's components): the part takes the
    /// outputs, answers, and the root carries the answers out; a part that is gone gets none.
    #[derive(Default)]
    struct Root {
        part: Option<Heard>,
        carried: Vec<String>,
    }

    impl Answers<Count> for Heard {
        type Effects = Option<String>;
        fn answer(&mut self, n: u32) -> Option<String> {
            self.0.push(n);
            (n == 2).then(|| "two".to_string())
        }
    }

    impl Reaches<Heard> for Root {
        fn part(&mut self) -> Option<&mut Heard> {
            self.part.as_mut()
        }
    }

    impl CarriesOut<Option<String>> for Root {
        fn carry_out(&mut self, effects: Option<String>) {
            self.carried.extend(effects);
        }
    }

    #[test]
    fn a_job_owned_by_a_part_reaches_the_part_and_its_answers_the_root() {
        let mut root = Root {
            part: Some(Heard::default()),
            ..Root::default()
        };
        for d in run_now(Queued::<Root>::to::<Count, Heard>(Count(3))) {
            d.deliver(&mut root);
        }
        assert_eq!(root.part.as_ref().map(|h| h.0.clone()), Some(vec![0, 1, 2, 3]));
        assert_eq!(root.carried, ["two"]);
        // The part closed before the outputs came: they are dropped, nothing is carried out.
        root.part = None;
        for d in run_now(Queued::<Root>::to::<Count, Heard>(Count(3))) {
            d.deliver(&mut root);
        }
        assert_eq!(root.carried, ["two"]);
    }

    /// A job that waits on tasks, as a model's summary does.
    struct Waits;

    impl Job for Waits {
        type Output = u32;
        const NAME: &'static str = "waits";
        fn run(self, _: Report<u32>) -> u32 {
            let work = async {
                let task = tokio::spawn(async {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    41
                });
                task.await.unwrap_or(0) + 1
            };
            block_on(work).unwrap_or(0)
        }
    }

    impl Receives<Waits> for Heard {
        fn receive(&mut self, n: u32) {
            self.0.push(n);
        }
    }

    /// A runtime with one worker (blocking jobs get threads of their own).
    fn one_worker() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    /// What a job spawned on a runtime of its own said, once the channel closes.
    fn spawned(job: Queued<Heard>) -> Heard {
        let rt = one_worker();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        spawn(job, rt.handle(), tx);
        let mut heard = Heard::default();
        rt.block_on(async {
            while let Some(d) = rx.recv().await {
                d.deliver(&mut heard);
            }
        });
        heard
    }

    #[test]
    fn a_job_waits_on_tasks_on_the_runtime_and_without_one() {
        assert_eq!(run_here(Waits), [42]);
        assert_eq!(spawned(Queued::new(Waits)).0, [42]);
    }

    /// A job that waits for its gate, then says its number.
    struct Gated(u32, Arc<std::sync::Barrier>);

    impl Job for Gated {
        type Output = u32;
        const NAME: &'static str = "gated";
        const LATEST_WINS: bool = true;
        fn run(self, _: Report<u32>) -> u32 {
            self.1.wait();
            if self.0 == 99 {
                panic!("a job that fails");
            }
            self.0
        }
    }

    impl Receives<Gated> for Heard {
        fn receive(&mut self, n: u32) {
            self.0.push(n);
        }
    }

    /// Forty requests while one runs: the first and the newest run, the 38 between never
    /// start; another session's requests have a slot of their own.
    #[test]
    fn latest_wins_runs_the_first_and_the_newest() {
        let rt = one_worker();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut runner = Runner::<Heard>::new(rt.handle().clone(), tx);
        let gate = Arc::new(std::sync::Barrier::new(2));
        let (a, b) = (DocToken::new(), DocToken::new());
        for k in 1..=40 {
            runner.start(Queued::new(Gated(k, gate.clone())).for_doc(&a));
        }
        runner.start(Queued::new(Gated(1000, gate.clone())).for_doc(&b));
        assert_eq!((runner.started, runner.superseded), (2, 38));
        let mut heard = Heard::default();
        for _ in 0..3 {
            gate.wait();
            let d = rt.block_on(rx.recv()).unwrap();
            runner.finished(&d);
            d.deliver(&mut heard);
        }
        heard.0.sort();
        assert_eq!(heard.0, [1, 40, 1000]);
        assert_eq!(runner.started, 3);
        // A job that panics frees its slot: the next request runs.
        runner.start(Queued::new(Gated(99, gate.clone())).for_doc(&a));
        runner.start(Queued::new(Gated(7, gate.clone())).for_doc(&a));
        gate.wait();
        let d = rt.block_on(rx.recv()).unwrap();
        runner.finished(&d);
        d.deliver(&mut heard);
        gate.wait();
        let d = rt.block_on(rx.recv()).unwrap();
        d.deliver(&mut heard);
        assert_eq!(heard.0.last(), Some(&7));
    }

    /// A job queued for a session left before a worker took it does not run; a result is
    /// for the session it was queued for.
    #[test]
    fn a_left_sessions_jobs_do_not_start_and_its_results_are_not_anothers() {
        let a = DocToken::new();
        let b = DocToken::new();
        let done = run_now(Queued::<Heard>::new(Count(1)).for_doc(&a));
        assert!(done.iter().all(|d| d.is_for(&a) && !d.is_for(&b)));
        a.leave();
        let heard = spawned(Queued::new(Count(3)).for_doc(&a));
        assert_eq!(heard.0, Vec::<u32>::new());
        // A job with no session is anyone's.
        assert!(run_now(Queued::<Heard>::new(Count(0)))[0].is_for(&b));
    }

    #[test]
    fn a_spawned_job_reports_on_the_channel() {
        let heard = spawned(Queued::new(Count(2)));
        assert_eq!(heard.0, [0, 1, 2]);
    }
}
