//! The board on disk (`parallel.json` in the loop's folder): the typed read
//! and write beside its type. Does I/O.

use super::Board;
use crate::paths::{LoopPaths, read_hint};
use crate::store::{self, StoreError};

impl LoopPaths {
    /// `--parallel`: the board (an unreadable one reads as empty).
    pub(crate) fn read_board(&self) -> Board {
        read_hint(&self.board)
            .map(|t| Board::parse(&t))
            .unwrap_or_default()
    }

    /// `--parallel`: record the board (atomically: status may read it).
    pub(crate) fn write_board(&self, board: &Board) -> Result<(), StoreError> {
        store::atomic_write(&self.board, board.render().as_bytes())
    }
}
