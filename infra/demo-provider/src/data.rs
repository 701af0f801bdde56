//! TrackShare's synthetic data: three people, their cars, sessions, laps, uploads,
//! downloads, and a table of error diagnoses. Nothing here is real.

use serde_json::{Value, json};
use std::collections::BTreeMap;

/// A car.
#[derive(Debug, Clone)]
pub struct Car {
    /// Id.
    pub id: &'static str,
    /// Display name.
    pub name: &'static str,
}

/// A recorded driving session.
#[derive(Debug, Clone)]
pub struct Session {
    /// Id.
    pub id: &'static str,
    /// Track.
    pub track: &'static str,
    /// Day.
    pub date: &'static str,
    /// Lap times in milliseconds.
    pub laps_ms: Vec<u32>,
    /// The car it is recorded under (what `reassign_session_car` changes).
    pub car_id: String,
    /// The upload it came from.
    pub upload_id: &'static str,
}

/// An uploaded telemetry file.
#[derive(Debug, Clone)]
pub struct Upload {
    /// Id.
    pub id: &'static str,
    /// File name.
    pub file_name: &'static str,
    /// Size.
    pub size_bytes: u64,
    /// `processed` or `failed`.
    pub status: &'static str,
    /// Error code when failed.
    pub error_code: Option<&'static str>,
}

/// A download (export) job.
#[derive(Debug, Clone)]
pub struct Download {
    /// Id.
    pub id: &'static str,
    /// `ready`, `running` or `failed`.
    pub status: &'static str,
    /// Percent done.
    pub progress: u8,
}

/// A person with a TrackShare account.
#[derive(Debug, Clone)]
pub struct User {
    /// Id (`X-MCP-User-Id`).
    pub id: &'static str,
    /// Display name.
    pub name: &'static str,
    /// May move sessions between cars.
    pub can_reassign: bool,
    /// Blocked accounts can read but not write.
    pub blocked: bool,
    /// A synthetic test person (for the certification run): writes are verified and
    /// answered `completed` but not applied, so a run can be repeated with the same
    /// arguments.
    pub synthetic: bool,
    /// Cars.
    pub cars: Vec<Car>,
    /// Sessions.
    pub sessions: Vec<Session>,
    /// Uploads.
    pub uploads: Vec<Upload>,
    /// Downloads.
    pub downloads: Vec<Download>,
}

/// Everyone's data.
#[derive(Debug, Clone)]
pub struct Data {
    /// By user id.
    pub users: BTreeMap<String, User>,
}

fn session(
    id: &'static str,
    track: &'static str,
    date: &'static str,
    laps_ms: &[u32],
    car: &str,
    upload_id: &'static str,
) -> Session {
    Session {
        id,
        track,
        date,
        laps_ms: laps_ms.to_vec(),
        car_id: car.to_owned(),
        upload_id,
    }
}

impl Default for Data {
    fn default() -> Self {
        let alice = User {
            id: "u_alice",
            name: "Alice",
            can_reassign: true,
            blocked: false,
            synthetic: false,
            cars: vec![
                Car {
                    id: "car_a1",
                    name: "Civic Type R",
                },
                Car {
                    id: "car_a2",
                    name: "GR86",
                },
                Car {
                    id: "car_a3",
                    name: "Cayman GT4",
                },
            ],
            sessions: vec![
                session(
                    "ses_a1",
                    "Interlagos",
                    "2026-11-20",
                    &[98_412, 97_108, 96_877],
                    "car_a1",
                    "up_a1",
                ),
                session(
                    "ses_a2",
                    "Spa-Francorchamps",
                    "2026-11-22",
                    &[141_002, 139_554],
                    "car_a1",
                    "up_a2",
                ),
            ],
            uploads: vec![
                Upload {
                    id: "up_a1",
                    file_name: "interlagos-1120.ld",
                    size_bytes: 4_812_003,
                    status: "processed",
                    error_code: None,
                },
                Upload {
                    id: "up_a2",
                    file_name: "spa-1122.ld",
                    size_bytes: 5_001_877,
                    status: "processed",
                    error_code: None,
                },
                Upload {
                    id: "up_a3",
                    file_name: "monza-1125.ld",
                    size_bytes: 12_044,
                    status: "failed",
                    error_code: Some("E_TRUNCATED"),
                },
            ],
            downloads: vec![Download {
                id: "dl_a1",
                status: "ready",
                progress: 100,
            }],
        };
        let bruno = User {
            id: "u_bruno",
            name: "Bruno",
            can_reassign: true,
            blocked: false,
            synthetic: false,
            cars: vec![
                Car {
                    id: "car_b1",
                    name: "MX-5",
                },
                Car {
                    id: "car_b2",
                    name: "M2",
                },
            ],
            sessions: vec![session(
                "ses_b1",
                "Nürburgring GP",
                "2026-11-18",
                &[121_900, 120_433],
                "car_b1",
                "up_b1",
            )],
            uploads: vec![Upload {
                id: "up_b1",
                file_name: "ring-1118.ld",
                size_bytes: 3_988_120,
                status: "processed",
                error_code: None,
            }],
            downloads: vec![Download {
                id: "dl_b1",
                status: "running",
                progress: 40,
            }],
        };
        let carla = User {
            id: "u_carla",
            name: "Carla",
            can_reassign: false,
            blocked: false,
            synthetic: false,
            cars: vec![
                Car {
                    id: "car_c1",
                    name: "Clio Cup",
                },
                Car {
                    id: "car_c2",
                    name: "Megane RS",
                },
            ],
            sessions: vec![session(
                "ses_c1",
                "Estoril",
                "2026-11-15",
                &[101_220],
                "car_c1",
                "up_c1",
            )],
            uploads: vec![Upload {
                id: "up_c1",
                file_name: "estoril-1115.ld",
                size_bytes: 2_400_000,
                status: "processed",
                error_code: None,
            }],
            downloads: vec![Download {
                id: "dl_c1",
                status: "failed",
                progress: 12,
            }],
        };
        // Names that are markup: the widget's tests check they are shown as text, in a
        // consultation's result and in a proposal's summary.
        let mallory = User {
            id: "u_mallory",
            name: "Mallory",
            can_reassign: true,
            blocked: false,
            synthetic: false,
            cars: vec![
                Car {
                    id: "car_m1",
                    name: "Track car",
                },
                Car {
                    id: "car_m2",
                    name: "<img src=x onerror=\"window.__xss=1\">",
                },
            ],
            sessions: vec![session(
                "ses_m1",
                "<b>Monza</b>",
                "2026-11-21",
                &[108_400],
                "car_m1",
                "up_m1",
            )],
            uploads: Vec::new(),
            downloads: Vec::new(),
        };
        let tester = |id: &'static str, name: &'static str, n: char| User {
            id,
            name,
            can_reassign: true,
            blocked: false,
            synthetic: true,
            cars: vec![
                Car {
                    id: if n == '1' { "car_t1" } else { "car_u1" },
                    name: "Test car one",
                },
                Car {
                    id: if n == '1' { "car_t2" } else { "car_u2" },
                    name: "Test car two",
                },
            ],
            sessions: vec![session(
                if n == '1' { "ses_t1" } else { "ses_u1" },
                "Test track",
                "2026-11-01",
                &[90_000],
                if n == '1' { "car_t1" } else { "car_u1" },
                if n == '1' { "up_t1" } else { "up_u1" },
            )],
            uploads: vec![Upload {
                id: if n == '1' { "up_t1" } else { "up_u1" },
                file_name: "test.ld",
                size_bytes: 1_000,
                status: "processed",
                error_code: None,
            }],
            downloads: Vec::new(),
        };
        let (test, test2) = (
            tester("countersign-test:u_test", "Test Person", '1'),
            tester("countersign-test:u_test2", "Second Test Person", '2'),
        );
        Self {
            users: [alice, bruno, carla, mallory, test, test2]
                .into_iter()
                .map(|u| (u.id.to_owned(), u))
                .collect(),
        }
    }
}

/// What an error code means.
pub fn diagnosis(code: &str) -> Option<&'static str> {
    match code {
        "E_TRUNCATED" => Some(
            "The file ends before the last lap: the logger was switched off while writing. Export it again from the logger.",
        ),
        "E_NO_GPS" => {
            Some("The file has no GPS channel, so laps cannot be split. Enable GPS logging.")
        }
        "E_UNKNOWN_FORMAT" => Some("The file format is not supported. Upload .ld or .csv files."),
        _ => None,
    }
}

impl User {
    /// The car with this id, if it is one of theirs.
    pub fn car(&self, id: &str) -> Option<&Car> {
        self.cars.iter().find(|c| c.id == id)
    }

    /// Their session with this id.
    pub fn session(&self, id: &str) -> Option<&Session> {
        self.sessions.iter().find(|s| s.id == id)
    }

    /// The JSON of a session summary.
    pub fn session_json(&self, s: &Session) -> Value {
        json!({"sessionId": s.id, "track": s.track, "date": s.date, "carId": s.car_id, "lapCount": s.laps_ms.len()})
    }
}
