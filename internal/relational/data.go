package relational

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Sizes are the data's dimensions. SeedSizes gives seed 000's.
type Sizes struct {
	// Projects is the number of projects; each has MembersPerProject
	// distinct users, drawn at random.
	Projects          int
	MembersPerProject int
	// Users is the number of users. The first Managers users manage the
	// others: every user above Managers reports to one of them, drawn at
	// random (User.subordinates, seed 000's "two parallel has many").
	Users    int
	Managers int
	// Tasks is the number of parent tasks, each assigned to a random user
	// and completed with probability one half; each has SubTasksPerTask
	// subtasks (same user, completion drawn the same way).
	Tasks           int
	SubTasksPerTask int
}

// SeedSizes returns seed 000's data set: 10 projects of 25 random users,
// 1,000 users, 10,000 parent tasks randomly assigned and completed, 10
// subtasks each. The seed names no manager relation; 100 managers give each
// about 9 subordinates.
func SeedSizes() Sizes {
	return Sizes{Projects: 10, MembersPerProject: 25, Users: 1000, Managers: 100, Tasks: 10000, SubTasksPerTask: 10}
}

// Scale returns s with its users, managers and tasks multiplied by f
// (projects and subtasks per task unchanged; at least one user more than
// the members of a project, so the sizes stay valid).
func (s Sizes) Scale(f float64) Sizes {
	s.Users = max(int(math.Round(float64(s.Users)*f)), s.MembersPerProject+1)
	s.Managers = min(int(math.Round(float64(s.Managers)*f)), s.Users-1)
	s.Tasks = int(math.Round(float64(s.Tasks) * f))
	return s
}

// Validate returns an error naming the first size out of range.
func (s Sizes) Validate() error {
	switch {
	case s.Projects < 1:
		return fmt.Errorf("projects must be at least 1 (got %d)", s.Projects)
	case s.Users < 1:
		return fmt.Errorf("users must be at least 1 (got %d)", s.Users)
	case s.MembersPerProject < 0 || s.MembersPerProject > s.Users:
		return fmt.Errorf("members per project must be between 0 and the %d users (got %d)", s.Users, s.MembersPerProject)
	case s.Managers < 0 || s.Managers >= s.Users:
		return fmt.Errorf("managers must be between 0 and users-1 = %d (got %d)", s.Users-1, s.Managers)
	case s.Tasks < 0 || s.SubTasksPerTask < 0:
		return fmt.Errorf("tasks and subtasks per task must not be negative (got %d and %d)", s.Tasks, s.SubTasksPerTask)
	}
	return nil
}

// Project is a row of projects.
type Project struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// User is a row of users. ManagerID is 0 for a user without a manager.
type User struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	ManagerID int64  `json:"managerId,omitempty"`
}

// Task is a row of tasks: a parent task (ParentID 0) or a subtask.
type Task struct {
	ID        int64  `json:"id"`
	UserID    int64  `json:"userId"`
	ParentID  int64  `json:"parentId,omitempty"`
	Name      string `json:"name"`
	Completed bool   `json:"completed"`
}

// Membership is a row of project_users: a user belongs to a project.
type Membership struct {
	ProjectID int64
	UserID    int64
}

// Dataset is the whole generated data, in id order.
type Dataset struct {
	Projects []Project
	Users    []User
	Members  []Membership // by project, then user id
	Tasks    []Task       // parent tasks first (ids 1..Tasks), then subtasks
}

// Generate returns the data for sizes, drawn from a PCG generator seeded
// with seed: the same seed and sizes give the same data, byte for byte, on
// every machine. Ids start at 1; parent task p's subtasks have the ids
// Tasks + (p-1)×SubTasksPerTask + 1 … + SubTasksPerTask.
func Generate(seed uint64, s Sizes) (Dataset, error) {
	if err := s.Validate(); err != nil {
		return Dataset{}, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed000))
	d := Dataset{
		Projects: make([]Project, s.Projects),
		Users:    make([]User, s.Users),
		Members:  make([]Membership, 0, s.Projects*s.MembersPerProject),
		Tasks:    make([]Task, 0, s.Tasks*(1+s.SubTasksPerTask)),
	}
	for i := range d.Users {
		u := User{ID: int64(i + 1), Name: fmt.Sprintf("User %d", i+1)}
		if i >= s.Managers && s.Managers > 0 {
			u.ManagerID = 1 + rng.Int64N(int64(s.Managers))
		}
		d.Users[i] = u
	}
	for p := range d.Projects {
		d.Projects[p] = Project{ID: int64(p + 1), Name: fmt.Sprintf("Project %d", p+1)}
		// A partial Fisher-Yates shuffle draws distinct members; they are
		// stored in user id order.
		perm := make([]int64, s.Users)
		for i := range perm {
			perm[i] = int64(i + 1)
		}
		for i := range s.MembersPerProject {
			j := i + rng.IntN(s.Users-i)
			perm[i], perm[j] = perm[j], perm[i]
		}
		members := perm[:s.MembersPerProject]
		slices.Sort(members)
		for _, u := range members {
			d.Members = append(d.Members, Membership{ProjectID: int64(p + 1), UserID: u})
		}
	}
	for t := range s.Tasks {
		d.Tasks = append(d.Tasks, Task{
			ID: int64(t + 1), UserID: 1 + rng.Int64N(int64(s.Users)),
			Name: fmt.Sprintf("Task %d", t+1), Completed: rng.IntN(2) == 1,
		})
	}
	for t := range s.Tasks {
		parent := d.Tasks[t]
		for k := range s.SubTasksPerTask {
			d.Tasks = append(d.Tasks, Task{
				ID: int64(s.Tasks + t*s.SubTasksPerTask + k + 1), UserID: parent.UserID, ParentID: parent.ID,
				Name: fmt.Sprintf("Task %d.%d", parent.ID, k+1), Completed: rng.IntN(2) == 1,
			})
		}
	}
	return d, nil
}
