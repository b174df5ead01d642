//! The job runner: one trait for every job, and a runner that knows no job.
//!
//! - A job is a struct with its own typed output (`Job::Output`): its progress and its end
//!   in one type of its own, so nobody takes a shared enum apart again.
//! - Whoever queues a job says how its output comes back (`Receives<J>`), so results go
//!   straight to their handler, with no table of every result in between.
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
    /// Do the work, saying progress through `report`; the returned value is the last output.
    fn run(self, report: Report<Self::Output>) -> Self::Output;
}

/// How a receiver takes a job's output: the job's handler, named once per job.
pub trait Receives<J: Job> {
    fn receive(&mut self, output: J::Output);
}

/// Where a running job says its progress.
pub struct Report<O>(Arc<dyn Fn(O) + Send + Sync>);

impl<O> Clone for Report<O> {
    fn clone(&self) -> Self {
        Report(self.0.clone())
    }
}

impl<O: 'static> Report<O> {
    pub fn new(f: impl Fn(O) + Send + Sync + 'static) -> Self {
        Report(Arc::new(f))
    }

    /// A report nobody reads.
    pub fn nowhere() -> Self {
        Report(Arc::new(|_| {}))
    }

    pub fn say(&self, output: O) {
        (self.0)(output)
    }
}

/// What carries finished outputs back to the receiver's loop.
type Sink<R> = Arc<dyn Fn(Done<R>) + Send + Sync>;

/// A job queued for receiver `R`: the job itself (tests look into it) and how to run it.
pub struct Queued<R> {
    job: Box<dyn Any + Send>,
    name: &'static str,
    writes_files: bool,
    run: fn(Box<dyn Any + Send>, Sink<R>),
}

impl<R: 'static> Queued<R> {
    pub fn new<J: Job>(job: J) -> Self
    where
        R: Receives<J>,
    {
        Queued {
            job: Box::new(job),
            name: J::NAME,
            writes_files: J::WRITES_FILES,
            run: run_erased::<J, R>,
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
}

impl<R> Done<R> {
    fn of<J: Job>(output: J::Output) -> Self
    where
        R: Receives<J>,
    {
        Done {
            output: Box::new(output),
            name: J::NAME,
            deliver: deliver::<J, R>,
        }
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

fn run_erased<J: Job, R: Receives<J> + 'static>(job: Box<dyn Any + Send>, sink: Sink<R>) {
    // The box was made by `Queued::new::<J>`, so it holds a `J`.
    let Ok(job) = job.downcast::<J>() else { return };
    let progress = sink.clone();
    let last = job.run(Report::new(move |o| progress(Done::of::<J>(o))));
    sink(Done::of::<J>(last));
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
        Arc::new(move |d| {
            if let Ok(mut v) = into.lock() {
                v.push(d);
            }
        }),
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
pub fn spawn<R: 'static>(
    queued: Queued<R>,
    handle: &tokio::runtime::Handle,
    tx: tokio::sync::mpsc::UnboundedSender<Done<R>>,
) {
    // Counted from here, not from when a worker takes it.
    // A quit right after a key that started a write still waits for it.
    let under_way = queued.writes_files.then(WriteUnderWay::start);
    handle.spawn_blocking(move || {
        (queued.run)(
            queued.job,
            Arc::new(move |d| {
                let _ = tx.send(d);
            }),
        );
        drop(under_way);
    });
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

    /// What a job spawned on a runtime of its own said, once the channel closes.
    fn spawned(job: Queued<Heard>) -> Heard {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
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

    #[test]
    fn a_spawned_job_reports_on_the_channel() {
        let heard = spawned(Queued::new(Count(2)));
        assert_eq!(heard.0, [0, 1, 2]);
    }
}
