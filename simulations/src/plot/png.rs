//! The PNG backend: plotters' bitmap backend, with text drawn here.
//!
//! Plotters' `ab_glyph` text drawing places each glyph at its pen position
//! without the glyph's left side bearing, so letters sit unevenly ("h onest");
//! this draws every glyph where the font puts it (pen position, bearing,
//! kerning), anti-aliased, rotated as the style asks. Text is still measured
//! by plotters (`layout_box`, the same font), so the chart's layout is the
//! one the SVG gets.

use ab_glyph::{Font, FontRef, ScaleFont, point};
use plotters::backend::BitMapBackend;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};

/// A bitmap backend writing a PNG, drawing text with `font`.
pub(super) struct PngBackend<'a> {
    bitmap: BitMapBackend<'a>,
    font: &'static FontRef<'static>,
}

type Error<'a> = DrawingErrorKind<<BitMapBackend<'a> as DrawingBackend>::ErrorType>;

impl<'a> PngBackend<'a> {
    /// A `size` image written to `path` on `present`.
    pub(super) fn new(path: &'a std::path::Path, size: (u32, u32), font: &'static FontRef<'static>) -> Self {
        Self { bitmap: BitMapBackend::new(path, size), font }
    }
}

impl<'a> DrawingBackend for PngBackend<'a> {
    type ErrorType = <BitMapBackend<'a> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.bitmap.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), Error<'a>> {
        self.bitmap.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), Error<'a>> {
        self.bitmap.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Result<(), Error<'a>> {
        self.bitmap.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(&mut self, from: BackendCoord, to: BackendCoord, style: &S) -> Result<(), Error<'a>> {
        self.bitmap.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(&mut self, upper_left: BackendCoord, bottom_right: BackendCoord, style: &S, fill: bool) -> Result<(), Error<'a>> {
        self.bitmap.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(&mut self, path: I, style: &S) -> Result<(), Error<'a>> {
        self.bitmap.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(&mut self, center: BackendCoord, radius: u32, style: &S, fill: bool) -> Result<(), Error<'a>> {
        self.bitmap.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(&mut self, vert: I, style: &S) -> Result<(), Error<'a>> {
        self.bitmap.fill_polygon(vert, style)
    }

    fn blit_bitmap(&mut self, pos: BackendCoord, size: (u32, u32), src: &[u8]) -> Result<(), Error<'a>> {
        self.bitmap.blit_bitmap(pos, size, src)
    }

    fn draw_text<S: BackendTextStyle>(&mut self, text: &str, style: &S, pos: BackendCoord) -> Result<(), Error<'a>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        // Anchoring as plotters' default `draw_text` does, from plotters' own
        // measure, so text lands where the layout left room for it.
        let ((min_x, min_y), (max_x, max_y)) = style.layout_box(text).map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (width, height) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let transform = style.transform();
        let font = self.font.as_scaled(style.size() as f32);
        // The font's line (ascent to descent) centred on the measured box.
        let baseline = (height as f32 - font.height()) / 2.0 + font.ascent();
        let mut caret = 0.0f32;
        let mut previous = None;
        let mut result = Ok(());
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(p) = previous {
                caret += font.kern(p, id);
            }
            previous = Some(id);
            let glyph = id.with_scale_and_position(font.scale(), point(caret, baseline));
            caret += font.h_advance(id);
            let Some(outline) = self.font.outline_glyph(glyph) else { continue };
            let bounds = outline.px_bounds();
            outline.draw(|x, y, coverage| {
                if result.is_err() || coverage <= 0.0 {
                    return;
                }
                let (gx, gy) = (bounds.min.x as i32 + x as i32, bounds.min.y as i32 + y as i32);
                let (tx, ty) = transform.transform(gx + dx - min_x, gy + dy - min_y);
                let alpha = color.alpha * f64::from(coverage.min(1.0));
                result = self.bitmap.draw_pixel((pos.0 + tx, pos.1 + ty), BackendColor { alpha, rgb: color.rgb });
            });
            if result.is_err() {
                break;
            }
        }
        result
    }
}
