//! Scratch: folly fetch_xor under global rules (a, b, f).
use smpsim_kernel::program::*;
use smpsim_kernel::spec::*;
use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const US: u64 = 1000;
fn e5_cpu(t: u32) -> u32 {
    let (thread, i) = (t / 28, t % 28);
    28 * thread + (i % 2) * 14 + i / 2
}
fn ns(
    preset: &str,
    threads: u32,
    cpus: fn(u32) -> u32,
    outside: u64,
    n: u32,
    a: f64,
    b: f64,
    f: f64,
) -> f64 {
    let groups = i64::from(threads / n);
    let mut m = preset_machine(preset);
    m.coherence.home = smpsim_machine::Home::Pipelined;
    m.coherence.occupancy.ns = a;
    m.coherence.occupancy_per_transfer = b;
    m.coherence.forward_fraction = f;
    let mut s = spec(m, 1_000 * US);
    s.warmup = 100 * US;
    s.objects.push(ObjectDecl {
        name: "line".into(),
        kind: ObjectKind::Atomic,
        per_cpu: true,
    });
    let line = ObjRef {
        object: 0,
        index: Some(Expr::Bin(
            BinOp::Rem,
            Box::new(Expr::TaskIndex),
            Box::new(Expr::Const(groups)),
        )),
    };
    let it = counter(&mut s, "it");
    let j = outside / 10;
    let ops = vec![
        Op::AtomicRmw(line),
        Op::Count(it),
        Op::Work(Dist::Uniform {
            lo: outside - j,
            hi: outside + j,
        }),
    ];
    forever(
        &mut s,
        "t",
        (0..threads).map(cpus).collect(),
        Policy::Normal,
        ops,
    );
    let rate = simulate(&s).counter("it").unwrap().rate;
    f64::from(threads) * 1e9 / rate
}
fn main() {
    let args: Vec<f64> = std::env::args()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    let (a, b, f) = (args[0], args[1], args[2]);
    let e5 = [661.0, 731.0, 1320.0, 2500.0, 3880.0];
    let d = [1260.0, 1270.0, 1390.0, 2480.0, 4120.0];
    let mut tot = 0.0;
    let mut line = String::new();
    for (i, n) in [2, 4, 8, 16, 32].iter().enumerate() {
        let x = ns("xeon-e5-2680v4-56", 56, e5_cpu, 598, *n, a, b, f);
        let y = ns("xeon-d2191-36", 36, |t| t, 1519, *n, a, b, f);
        let (r1, r2) = (x / e5[i], y / d[i]);
        tot += r1.ln().powi(2) + r2.ln().powi(2);
        line += &format!(" N{n}: {r1:.2}/{r2:.2}");
    }
    println!("a={a} b={b} f={f} msle={:.3}{line}", tot / 10.0);
}
