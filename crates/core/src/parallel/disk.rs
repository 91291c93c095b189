//! The board on disk (`parallel.json` in the loop's folder): the typed read
//! and write beside its type. Does I/O.

use super::Board;
use crate::store::{self, StoreError};
use std::path::Path;

/// `--parallel`: the board at `path` (an unreadable one reads as empty).
pub(crate) fn read_board(path: &Path) -> Board {
    store::read_hint(path)
        .map(|t| Board::parse(&t))
        .unwrap_or_default()
}

/// `--parallel`: record the board at `path` (atomically: status may read it).
pub(crate) fn write_board(path: &Path, board: &Board) -> Result<(), StoreError> {
    store::atomic_write(path, board.render().as_bytes())
}
