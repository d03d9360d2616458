// Command ask_user_cycle does the ask_user cycle against an agentd server
// from Go, with the generated module agentd/clients/go: it starts a run
// that asks a single-select question, answers it with a label that is not
// an option (the server refuses with INVALID_ARGUMENT and the run stays
// suspended), then with a valid one, and checks the final text.
//
// Usage: ask_user_cycle [HOST:PORT] (or AGENTD_TARGET; default
// 127.0.0.1:50051). AGENTD_API_KEY, if set, is sent as
// `authorization: Bearer <key>`. Exits non-zero if the server does not
// behave as the contract says.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	agentdv1 "agentd/clients/go/agentd/v1"
)

// turn is what one stream of a run ended with.
type turn struct {
	runID       string
	suspensions []*agentdv1.ToolCallSuspended
	finish      *agentdv1.RunFinished
}

// follow prints a stream's chunks and returns what it ended with.
func follow(stream interface {
	Recv() (*agentdv1.AgentChunk, error)
}) (turn, error) {
	var t turn
	for {
		chunk, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return t, err
		}
		if t.runID == "" {
			t.runID = chunk.GetRunId()
		}
		switch kind := chunk.GetChunk().(type) {
		case *agentdv1.AgentChunk_TextDelta:
			fmt.Print(kind.TextDelta.GetText())
		case *agentdv1.AgentChunk_ToolCallSuspended:
			t.suspensions = append(t.suspensions, kind.ToolCallSuspended)
		case *agentdv1.AgentChunk_Finish:
			t.finish = kind.Finish
			fmt.Printf("\n[finish] %s\n", kind.Finish.GetReason())
		default:
			fmt.Printf("[%d] %T\n", chunk.GetSeq(), kind)
		}
	}
	if t.finish == nil {
		return t, fmt.Errorf("the stream ended without a finish chunk")
	}
	return t, nil
}

func run(target string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if key := os.Getenv("AGENTD_API_KEY"); key != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
	}
	conn, err := grpc.DialContext(ctx, target, grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", target, err)
	}
	defer conn.Close()
	client := agentdv1.NewAgentServiceClient(conn)

	stream, err := client.StreamAgent(ctx, &agentdv1.StreamAgentRequest{Prompt: "Help me pick a plan"})
	if err != nil {
		return err
	}
	started, err := follow(stream)
	if err != nil {
		return err
	}
	if started.finish.GetReason() != agentdv1.FinishReason_FINISH_REASON_SUSPENDED || len(started.suspensions) != 1 {
		return fmt.Errorf("expected one suspension, got %v", started.finish)
	}
	suspended := started.suspensions[0]
	ask := suspended.GetSuspendPayload().GetAskUser()
	fmt.Printf("? %s (%s)\n", ask.GetQuestion(), ask.GetSelectionMode())
	for _, option := range ask.GetOptions() {
		fmt.Printf("  - %s: %s\n", option.GetLabel(), option.GetDescription())
	}

	resume := func(text string) (turn, error) {
		stream, err := client.Resume(ctx, &agentdv1.ResumeRequest{
			RunId:      started.runID,
			ToolCallId: suspended.GetToolCallId(),
			Answer:     &agentdv1.ResumeRequest_Text{Text: text},
		})
		if err != nil {
			return turn{}, err
		}
		return follow(stream)
	}
	if _, err := resume("Gold"); status.Code(err) != codes.InvalidArgument {
		return fmt.Errorf("an answer that is not an option must be INVALID_ARGUMENT, got %v", err)
	} else {
		fmt.Printf("rejected: %s\n", status.Convert(err).Message())
	}
	got, err := client.GetRun(ctx, &agentdv1.GetRunRequest{RunId: started.runID})
	if err != nil {
		return err
	}
	if got.GetStatus() != agentdv1.RunStatus_RUN_STATUS_SUSPENDED {
		return fmt.Errorf("the run must stay suspended, it is %s", got.GetStatus())
	}
	label := ask.GetOptions()[1].GetLabel()
	fmt.Printf("> %s\n", label)
	done, err := resume(label)
	if err != nil {
		return err
	}
	want := "Thanks! You answered: " + label + "."
	if done.finish.GetReason() != agentdv1.FinishReason_FINISH_REASON_STOP || done.finish.GetText() != want {
		return fmt.Errorf("expected %q, got %v", want, done.finish)
	}
	return nil
}

func main() {
	target := os.Getenv("AGENTD_TARGET")
	if len(os.Args) > 1 {
		target = os.Args[1]
	}
	if target == "" {
		target = "127.0.0.1:50051"
	}
	if err := run(target); err != nil {
		fmt.Fprintln(os.Stderr, "unexpected:", err)
		os.Exit(1)
	}
	fmt.Println("go example: OK")
}
