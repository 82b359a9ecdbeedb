//! A plot's SVG drawn as a PNG, with a bundled font.

/// The font every PNG is drawn with, bundled so that a PNG is the same on
/// every host (DejaVu Sans, Bitstream Vera license: fonts/DejaVuSans-LICENSE.txt).
const FONT: &[u8] = include_bytes!("../../fonts/DejaVuSans.ttf");

/// An SVG of ours drawn as a PNG at twice its size, with [`FONT`] for
/// every text.
pub fn png(svg: &str) -> Result<Vec<u8>, String> {
    let mut opt = resvg::usvg::Options {
        font_family: "DejaVu Sans".into(),
        ..Default::default()
    };
    let db = opt.fontdb_mut();
    db.load_font_data(FONT.to_vec());
    db.set_sans_serif_family("DejaVu Sans");
    let tree = resvg::usvg::Tree::from_str(svg, &opt)
        .map_err(|e| format!("error: drawing the PNG: {e}"))?;
    let size = tree.size().to_int_size();
    let scale = 2.0;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(
        (size.width() as f32 * scale) as u32,
        (size.height() as f32 * scale) as u32,
    )
    .ok_or("error: drawing the PNG: an empty image")?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| format!("error: encoding the PNG: {e}"))
}
