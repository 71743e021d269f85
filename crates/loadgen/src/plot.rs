//! Charts of the reports, PNG or SVG by the file's extension.
//!
//! Text is drawn with DejaVu Sans embedded in the binary (the `dejavu` crate) through
//! plotters' `ab_glyph` renderer, so plotting needs no fontconfig and no system fonts. PNG
//! files are encoded from the bitmap backend's buffer with the `png` crate.

use crate::rate::RateReport;
use crate::report::group;
use crate::rr::RrReport;
use crate::Error;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::path::Path;
use std::sync::Once;

const SIZE: (u32, u32) = (1000, 800);
const FONT: &str = "sans-serif";

fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Both fonts are valid TrueType files shipped by the `dejavu` crate.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Draws the sweep: ops/s against streams (median line, every run as a dot), and below it
/// p50 and p99 latency against streams.
pub fn rr(report: &RrReport, path: &Path) -> Result<(), Error> {
    render(path, report)
}

/// Draws a rate run: sent and received per second, and below it min/avg/p99/max latency per
/// second (log scale).
pub fn rate(report: &RateReport, path: &Path) -> Result<(), Error> {
    render(path, report)
}

/// A report that can draw itself on any backend.
trait Chart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

impl Chart for RrReport {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        draw_rr(root, self)
    }
}

impl Chart for RateReport {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        draw_rate(root, self)
    }
}

/// Draws `chart` on a backend chosen by the extension of `path`, and writes the file.
fn render(path: &Path, chart: &impl Chart) -> Result<(), Error> {
    register_fonts();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let (w, h) = SIZE;
    match ext.as_str() {
        "svg" => {
            let root = SVGBackend::new(path, SIZE).into_drawing_area();
            chart.draw(&root).map_err(Error::Plot)?;
            root.present().map_err(|e| Error::Plot(e.to_string()))?;
        }
        "png" => {
            let mut buf = vec![0u8; (w * h * 3) as usize];
            {
                let root = BitMapBackend::with_buffer(&mut buf, SIZE).into_drawing_area();
                chart.draw(&root).map_err(Error::Plot)?;
                root.present().map_err(|e| Error::Plot(e.to_string()))?;
            }
            write_png(path, w, h, &buf)?;
        }
        _ => {
            return Err(Error::Plot(format!(
                "{}: use a .png or .svg file name",
                path.display()
            )))
        }
    }
    Ok(())
}

fn write_png(path: &Path, w: u32, h: u32, rgb: &[u8]) -> Result<(), Error> {
    let io = |e: std::io::Error| Error::Io {
        what: path.display().to_string(),
        error: e,
    };
    let file = std::fs::File::create(path).map_err(io)?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(|e| Error::Plot(e.to_string()))?;
    writer
        .write_image_data(rgb)
        .map_err(|e| Error::Plot(e.to_string()))?;
    writer.finish().map_err(|e| Error::Plot(e.to_string()))
}

/// A range from 0 to a bit above `max`.
fn up_to(max: f64) -> std::ops::Range<f64> {
    0.0..if max > 0.0 { max * 1.12 } else { 1.0 }
}

fn draw_rr<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &RrReport) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let xs: Vec<f64> = r.points.iter().map(|p| p.streams as f64).collect();
    let x0 = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let x1 = xs.iter().copied().fold(0.0, f64::max);
    // A geometric sweep (1,2,4,...,32) reads best on a log2 axis (ticks 1, 2, 4, ...);
    // a range such as 1..16 on a linear one.
    let axis = if x1 / x0 >= 16.0 && xs.len() < 2 * (x1 / x0).log2() as usize + 2 {
        XAxis {
            range: x0.log2() - 0.3..x1.log2() + 0.3,
            to_axis: f64::log2,
            label: |v| {
                let r = v.round();
                if (v - r).abs() < 0.01 {
                    format!("{}", 2f64.powf(r).round())
                } else {
                    String::new()
                }
            },
        }
    } else {
        let pad = ((x1 - x0) * 0.04).max(0.5);
        XAxis {
            range: (x0 - pad).max(0.0)..x1 + pad,
            to_axis: |v| v,
            label: |v| format!("{v:.0}"),
        }
    };
    draw_rr_panels(root, r, &axis)
}

/// How stream counts map onto the x axis of the sweep.
struct XAxis {
    range: std::ops::Range<f64>,
    to_axis: fn(f64) -> f64,
    label: fn(f64) -> String,
}

fn draw_rr_panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    r: &RrReport,
    axis: &XAxis,
) -> Result<(), String> {
    let (top, bottom) = root.split_vertically(SIZE.1 * 58 / 100);
    let x = |streams: usize| (axis.to_axis)(streams as f64);
    let ticks = ((axis.range.end - axis.range.start).ceil() as usize + 1).clamp(2, 20);
    let x_label = |v: &f64| (axis.label)(*v);
    let max_ops = r
        .points
        .iter()
        .flat_map(|p| p.runs.iter().map(|run| run.ops_per_s))
        .fold(0.0, f64::max);
    let title = match &r.peak {
        Some(p) => format!(
            "DNS_RR {}: peak {} ops/s at {} streams ({} s x {} runs)",
            r.server,
            group(p.ops_per_s),
            p.streams,
            r.duration_s,
            r.runs
        ),
        None => format!("DNS_RR {}", r.server),
    };
    let frame = Frame {
        caption: &title,
        caption_size: 22,
        x_desc: "streams",
        y_desc: "answers per second",
        x_labels: Some(ticks),
        x_label: &x_label,
        y_label: &|v| group(*v),
    };
    let mut chart = panel(&top, &frame, axis.range.clone(), up_to(max_ops))?;
    let blue = RGBColor(31, 119, 180);
    let median: Vec<(f64, f64)> = r
        .points
        .iter()
        .map(|p| (x(p.streams), p.ops_per_s))
        .collect();
    line_with_dots(&mut chart, &median, "median of runs", blue, 5)?;
    let runs: Vec<(f64, f64)> = r
        .points
        .iter()
        .flat_map(|p| p.runs.iter().map(move |run| (x(p.streams), run.ops_per_s)))
        .collect();
    chart
        .draw_series(
            runs.iter()
                .map(|&p| Circle::new(p, 3, BLACK.mix(0.45).filled())),
        )
        .map_err(err)?
        .label("each run")
        .legend(|(x, y)| Circle::new((x + 10, y), 3, BLACK.mix(0.45).filled()));
    if let Some(p) = &r.peak {
        chart
            .draw_series(std::iter::once(Circle::new(
                (x(p.streams), p.ops_per_s),
                9,
                RED.stroke_width(2),
            )))
            .map_err(err)?
            .label("peak")
            .legend(|(x, y)| Circle::new((x + 10, y), 6, RED.stroke_width(2)));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;

    let lats: Vec<f64> = r
        .points
        .iter()
        .flat_map(|p| [p.latency.p50_ms, p.latency.p99_ms])
        .flatten()
        .collect();
    let frame = Frame {
        caption: "latency per stream count (log scale)",
        caption_size: 18,
        x_desc: "streams",
        y_desc: "milliseconds",
        x_labels: Some(ticks),
        x_label: &x_label,
        y_label: &|v| format!("{v:.3}"),
    };
    let y = log_range(&lats, 0.7, 1.4).log_scale();
    let mut chart = panel(&bottom, &frame, axis.range.clone(), y)?;
    let orange = RGBColor(255, 127, 14);
    let green = RGBColor(44, 160, 44);
    type Pick = fn(&crate::RrPoint) -> Option<f64>;
    let series: [(&str, RGBColor, Pick); 2] = [
        ("p99", orange, |p| p.latency.p99_ms),
        ("p50", green, |p| p.latency.p50_ms),
    ];
    for (name, color, pick) in series {
        let pts: Vec<(f64, f64)> = r
            .points
            .iter()
            .filter_map(|p| pick(p).filter(|v| *v > 0.0).map(|v| (x(p.streams), v)))
            .collect();
        line_with_dots(&mut chart, &pts, name, color, 4)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

fn draw_rate<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    r: &RateReport,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let (top, bottom) = root.split_vertically(SIZE.1 / 2);
    let n = r.seconds.len().max(1) as f64;
    let x_range = 0.0..n + 0.5;
    let max_rate = r
        .seconds
        .iter()
        .map(|s| s.sent.max(s.received) as f64)
        .fold(r.qps_target, f64::max);
    let title = format!(
        "{} {} {}: asked {} q/s, sent {} q/s, answered {} q/s",
        r.server,
        r.transport.to_uppercase(),
        r.family,
        group(r.qps_target),
        group(r.sent_qps),
        group(r.answered_qps)
    );
    let frame = Frame {
        caption: &title,
        caption_size: 20,
        x_desc: "seconds",
        y_desc: "per second",
        x_labels: None,
        x_label: &|v| format!("{v:.0}"),
        y_label: &|v| group(*v),
    };
    let mut chart = panel(&top, &frame, x_range.clone(), up_to(max_rate))?;
    let blue = RGBColor(31, 119, 180);
    let green = RGBColor(44, 160, 44);
    let red = RGBColor(214, 39, 40);
    type Pick = fn(&crate::RateSecond) -> f64;
    let series: [(&str, RGBColor, Pick); 3] = [
        ("sent", blue, |s| s.sent as f64),
        ("received", green, |s| s.received as f64),
        ("timeouts", red, |s| s.timeouts as f64),
    ];
    for (name, color, pick) in series {
        let pts: Vec<(f64, f64)> = r.seconds.iter().map(|s| (s.t_s as f64, pick(s))).collect();
        if name == "timeouts" && pts.iter().all(|p| p.1 == 0.0) {
            continue;
        }
        line_with_dots(&mut chart, &pts, name, color, 3)?;
    }
    // The end of the sending window: later seconds only hold late answers and timeouts.
    let end = r.duration_s;
    let purple = RGBColor(148, 103, 189);
    chart
        .draw_series(DashedLineSeries::new(
            vec![(end, 0.0), (end, max_rate * 1.12)],
            8,
            5,
            purple.stroke_width(2),
        ))
        .map_err(err)?
        .label("end of sending")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], purple.stroke_width(2)));
    legend(&mut chart, SeriesLabelPosition::MiddleLeft)?;

    type PickMs = fn(&crate::RateSecond) -> Option<f64>;
    let lat: [(&str, RGBColor, PickMs); 4] = [
        ("max", red, |s| s.max_ms),
        ("p99", RGBColor(255, 127, 14), |s| s.p99_ms),
        ("avg", blue, |s| s.avg_ms),
        ("min", green, |s| s.min_ms),
    ];
    let all: Vec<f64> = r
        .seconds
        .iter()
        .flat_map(|s| [s.min_ms, s.max_ms])
        .flatten()
        .collect();
    let frame = Frame {
        caption: "latency per second (log scale)",
        caption_size: 18,
        x_desc: "seconds",
        y_desc: "milliseconds",
        x_labels: None,
        x_label: &|v| format!("{v:.0}"),
        y_label: &|v| format!("{v:.3}"),
    };
    let y = log_range(&all, 0.8, 1.25).log_scale();
    let mut chart = panel(&bottom, &frame, x_range, y)?;
    for (name, color, pick) in lat {
        let pts: Vec<(f64, f64)> = r
            .seconds
            .iter()
            .filter_map(|s| pick(s).filter(|v| *v > 0.0).map(|v| (s.t_s as f64, v)))
            .collect();
        line_with_dots(&mut chart, &pts, name, color, 3)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}

/// What sets one panel apart: its texts and tick labels. The rest of the frame (margins,
/// label areas, fonts) is in [`panel`], so that all four panels look alike.
struct Frame<'f> {
    caption: &'f str,
    caption_size: u32,
    x_desc: &'f str,
    y_desc: &'f str,
    /// How many x labels; `None` keeps plotters' default.
    x_labels: Option<usize>,
    x_label: &'f dyn Fn(&f64) -> String,
    y_label: &'f dyn Fn(&f64) -> String,
}

/// One panel on `area` with its caption, axes and mesh drawn: every chart starts so.
fn panel<'a, DB: DrawingBackend, Y: AsRangedCoord<Value = f64>>(
    area: &'a DrawingArea<DB, Shift>,
    frame: &Frame<'_>,
    x: std::ops::Range<f64>,
    y: Y,
) -> Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y::CoordDescType>>, String>
where
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .caption(frame.caption, (FONT, frame.caption_size))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(x, y)
        .map_err(err)?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(frame.x_desc).y_desc(frame.y_desc);
    if let Some(n) = frame.x_labels {
        mesh.x_labels(n);
    }
    mesh.x_label_formatter(frame.x_label)
        .y_label_formatter(frame.y_label)
        .label_style((FONT, 14))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// Draws `pts` as a labelled line with a dot of radius `dot` at each point: the one way every
/// series of the charts is drawn, so the legend entries match.
fn line_with_dots<'a, DB: DrawingBackend + 'a, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    pts: &[(f64, f64)],
    name: &str,
    color: RGBColor,
    dot: i32,
) -> Result<(), String> {
    chart
        .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
        .map_err(err)?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    chart
        .draw_series(pts.iter().map(|&p| Circle::new(p, dot, color.filled())))
        .map_err(err)?;
    Ok(())
}

/// Draws the legend box at `pos`, styled alike on every panel.
fn legend<'a, DB: DrawingBackend + 'a, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    pos: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(pos)
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// A log-scale range around the positive `values`, `below` and `above` their extremes
/// (0.01..1 if there are none): both latency panels scale so.
fn log_range(values: &[f64], below: f64, above: f64) -> std::ops::Range<f64> {
    let pos = values.iter().copied().filter(|v| *v > 0.0);
    let lo = pos.clone().fold(f64::INFINITY, f64::min);
    let hi = pos.fold(0.0, f64::max);
    if lo.is_finite() {
        lo * below..hi * above
    } else {
        0.01..1.0
    }
}
